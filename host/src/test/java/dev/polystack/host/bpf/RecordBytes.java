package dev.polystack.host.bpf;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;

/** Builds capture records as the kernel program lays them out, for tests of what reads them. */
public final class RecordBytes {
  private final List<long[]> regionHeads = new ArrayList<>();
  private final List<byte[]> regionBytes = new ArrayList<>();
  private final long[] regs = new long[CaptureRecord.REGISTERS];
  private int tgid = 1;
  private int tid = 1;
  private long time = 1;
  private int flags;
  private long stackStart;
  private byte[] stack = new byte[0];
  private final int[] stops = new int[0];

  public RecordBytes ids(int tgid, int tid) {
    this.tgid = tgid;
    this.tid = tid;
    return this;
  }

  public RecordBytes time(long monotonicNanos) {
    this.time = monotonicNanos;
    return this;
  }

  public RecordBytes inKernel() {
    flags |= 1;
    return this;
  }

  public RecordBytes register(int ordinal, long value) {
    regs[ordinal] = value;
    return this;
  }

  public RecordBytes stack(long start, byte[] bytes) {
    this.stackStart = start;
    this.stack = bytes.clone();
    return this;
  }

  public RecordBytes region(long address, byte[] bytes, int plan, int step) {
    regionHeads.add(new long[] {address, plan, step});
    regionBytes.add(bytes.clone());
    return this;
  }

  public byte[] build() {
    int size = CaptureRecord.HEADER_SIZE + pad(stack.length);
    for (byte[] r : regionBytes) {
      size += CaptureRecord.REGION_HEADER + pad(r.length);
    }
    ByteBuffer b = ByteBuffer.allocate(size).order(ByteOrder.LITTLE_ENDIAN);
    b.putShort(0, (short) CaptureRecord.VERSION);
    b.putShort(2, (short) CaptureRecord.HEADER_SIZE);
    b.putInt(4, size);
    b.putInt(8, tgid);
    b.putInt(12, tid);
    b.putLong(16, time);
    b.putInt(24, 0);
    b.putInt(28, flags);
    for (int i = 0; i < regs.length; i++) {
      b.putLong(32 + 8 * i, regs[i]);
    }
    b.putLong(168, stackStart);
    b.putInt(176, stack.length);
    b.putShort(180, (short) stops.length);
    b.putShort(182, (short) regionBytes.size());
    b.put(CaptureRecord.HEADER_SIZE, stack);
    int at = CaptureRecord.HEADER_SIZE + pad(stack.length);
    for (int i = 0; i < regionBytes.size(); i++) {
      long[] h = regionHeads.get(i);
      b.putLong(at, h[0]);
      b.putInt(at + 8, regionBytes.get(i).length);
      b.put(at + 12, (byte) h[1]);
      b.put(at + 13, (byte) h[2]);
      b.put(at + CaptureRecord.REGION_HEADER, regionBytes.get(i));
      at += CaptureRecord.REGION_HEADER + pad(regionBytes.get(i).length);
    }
    return b.array();
  }

  private static int pad(int n) {
    return (n + 7) & ~7;
  }
}
