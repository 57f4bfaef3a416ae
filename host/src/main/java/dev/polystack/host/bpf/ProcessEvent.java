package dev.polystack.host.bpf;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * A process event the capture program puts in the ring beside tick records (version 2 records,
 * layout in docs/capture-plans.md): a target ran a new program, its main thread exited, or a
 * followed target created a process that is now a target too.
 *
 * @param parent for {@link Kind#FORK}, the process that created {@code tgid}; else 0
 */
public record ProcessEvent(Kind kind, int tgid, int tid, long monotonicNanos, int parent) {
  static final int VERSION = 2;
  static final int SIZE = 32;

  /** What happened. */
  public enum Kind { EXEC, EXIT, FORK }

  /** Whether a ring record is a process event rather than a tick ({@link CaptureRecord}). */
  public static boolean isEvent(ByteBuffer record) {
    return record.remaining() >= 2
        && Short.toUnsignedInt(record.duplicate().order(ByteOrder.LITTLE_ENDIAN)
            .getShort(record.position())) == VERSION;
  }

  /** Parses one event record; IllegalArgumentException when it is malformed. */
  public static ProcessEvent parse(ByteBuffer in) {
    ByteBuffer b = in.duplicate().order(ByteOrder.LITTLE_ENDIAN);
    int base = b.position();
    if (b.remaining() < SIZE) {
      throw new IllegalArgumentException("process event of " + b.remaining() + " bytes");
    }
    int version = Short.toUnsignedInt(b.getShort(base));
    int header = Short.toUnsignedInt(b.getShort(base + 2));
    long size = Integer.toUnsignedLong(b.getInt(base + 4));
    if (version != VERSION || header != SIZE || size != SIZE) {
      throw new IllegalArgumentException("process event version " + version + ", header "
          + header + ", size " + size);
    }
    int kind = b.getInt(base + 24);
    if (kind < 1 || kind > Kind.values().length) {
      throw new IllegalArgumentException("process event of kind " + kind);
    }
    int tgid = b.getInt(base + 8);
    int tid = b.getInt(base + 12);
    if (tgid <= 0 || tid <= 0) {
      throw new IllegalArgumentException("process event for pid " + tgid + "/" + tid);
    }
    return new ProcessEvent(Kind.values()[kind - 1], tgid, tid, b.getLong(base + 16),
        b.getInt(base + 28));
  }
}
