package dev.polystack.host.bpf;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;

/**
 * One tick as the capture program recorded it (layout in docs/capture-plans.md): the thread's
 * user registers, its stack from under the red zone, and the regions its runtime's plans copied.
 * Parsing checks every length against the record it came in, so a malformed record is refused
 * whole instead of read past.
 *
 * @param regs the 17 general registers in {@link dev.polystack.plugin.api.Register} order
 * @param inKernel the tick landed in the kernel (a system call): {@code regs} are the thread's
 *     saved user registers, where it will resume
 * @param planStops per plan run, 0 if it ran to its end, else (step index + 1) | reason << 8
 * @param threadPointer the thread's FS base at the tick, 0 where the record has none
 */
public record CaptureRecord(int tgid, int tid, long monotonicNanos, int cpu, boolean inKernel,
    long[] regs, long stackStart, byte[] stack, int[] planStops, List<Region> regions,
    long threadPointer) {

  static final int VERSION = 1;
  static final int HEADER_SIZE = 200;
  static final int REGION_HEADER = 16;
  static final int REGISTERS = 17;
  private static final int FLAG_THREAD_POINTER = 4;
  private static final int RESERVED_OFFSET = 192;
  /** Stop reasons of a plan. */
  public static final int STOP_LOAD = 1;
  public static final int STOP_CHECK = 2;
  public static final int STOP_INVALID = 3;

  /** Bytes a plan copied at the tick: {@code bytes.length} may be short of what it asked. */
  public record Region(long address, byte[] bytes, int plan, int step) {}

  /** Parses one ring record; IllegalArgumentException when it is malformed. */
  public static CaptureRecord parse(ByteBuffer in) {
    ByteBuffer b = in.duplicate().order(ByteOrder.LITTLE_ENDIAN);
    int base = b.position();
    int available = b.remaining();
    if (available < HEADER_SIZE) {
      throw new IllegalArgumentException("record of " + available + " bytes is shorter than its"
          + " header");
    }
    int version = Short.toUnsignedInt(b.getShort(base));
    int headerSize = Short.toUnsignedInt(b.getShort(base + 2));
    long size = Integer.toUnsignedLong(b.getInt(base + 4));
    if (version != VERSION || headerSize != HEADER_SIZE || size > available || size < headerSize) {
      throw new IllegalArgumentException("record version " + version + ", header " + headerSize
          + ", size " + size + " of " + available);
    }
    int tgid = b.getInt(base + 8);
    int tid = b.getInt(base + 12);
    long time = b.getLong(base + 16);
    int cpu = b.getInt(base + 24);
    int flags = b.getInt(base + 28);
    long[] regs = new long[REGISTERS];
    for (int i = 0; i < REGISTERS; i++) {
      regs[i] = b.getLong(base + 32 + 8 * i);
    }
    long stackStart = b.getLong(base + 168);
    long stackLen = Integer.toUnsignedLong(b.getInt(base + 176));
    int planCount = Short.toUnsignedInt(b.getShort(base + 180));
    int regionCount = Short.toUnsignedInt(b.getShort(base + 182));
    if (planCount > 4) {
      throw new IllegalArgumentException("record claims " + planCount + " plans");
    }
    int[] stops = new int[planCount];
    for (int i = 0; i < planCount; i++) {
      stops[i] = (b.get(base + 184 + i) & 0xff) | (b.get(base + 188 + i) & 0xff) << 8;
    }
    long at = HEADER_SIZE;
    if (stackLen > size - at) {
      throw new IllegalArgumentException("stack of " + stackLen + " bytes overruns the record");
    }
    byte[] stack = new byte[(int) stackLen];
    b.get(base + (int) at, stack);
    at += pad8(stackLen);
    List<Region> regions = new ArrayList<>(regionCount);
    for (int r = 0; r < regionCount; r++) {
      if (at + REGION_HEADER > size) {
        throw new IllegalArgumentException("region " + r + " overruns the record");
      }
      int p = base + (int) at;
      long address = b.getLong(p);
      long length = Integer.toUnsignedLong(b.getInt(p + 8));
      int plan = b.get(p + 12) & 0xff;
      int step = b.get(p + 13) & 0xff;
      at += REGION_HEADER;
      if (length > size - at) {
        throw new IllegalArgumentException("region " + r + " of " + length
            + " bytes overruns the record");
      }
      byte[] bytes = new byte[(int) length];
      b.get(base + (int) at, bytes);
      at += pad8(length);
      regions.add(new Region(address, bytes, plan, step));
    }
    long threadPointer = (flags & FLAG_THREAD_POINTER) != 0
        ? b.getLong(base + RESERVED_OFFSET) : 0;
    return new CaptureRecord(tgid, tid, time, cpu, (flags & 1) != 0, regs, stackStart, stack,
        stops, List.copyOf(regions), threadPointer);
  }

  private static long pad8(long n) {
    return (n + 7) & ~7L;
  }
}
