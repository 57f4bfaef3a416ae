package dev.polystack.host.perf;

import java.nio.BufferUnderflowException;
import java.nio.ByteBuffer;

/** Decodes PERF_RECORD_SAMPLE bodies for one sample_type / register mask combination. */
public final class SampleParser {
  private static final long SUPPORTED =
      PerfConstants.SAMPLE_IDENTIFIER | PerfConstants.SAMPLE_IP | PerfConstants.SAMPLE_TID
          | PerfConstants.SAMPLE_TIME | PerfConstants.SAMPLE_ADDR | PerfConstants.SAMPLE_ID
          | PerfConstants.SAMPLE_STREAM_ID | PerfConstants.SAMPLE_CPU
          | PerfConstants.SAMPLE_PERIOD | PerfConstants.SAMPLE_CALLCHAIN
          | PerfConstants.SAMPLE_REGS_USER | PerfConstants.SAMPLE_STACK_USER;

  private final long sampleType;
  private final long regsMask;

  public SampleParser(long sampleType, long regsMask) {
    if ((sampleType & ~SUPPORTED) != 0) {
      throw new IllegalArgumentException(
          "unsupported sample_type bits 0x" + Long.toHexString(sampleType & ~SUPPORTED));
    }
    this.sampleType = sampleType;
    this.regsMask = regsMask;
  }

  public static SampleParser forAttr(PerfEventAttr attr) {
    return new SampleParser(attr.sampleType(), attr.sampleRegsUser());
  }

  /**
   * Parses a sample. Throws IllegalArgumentException for a record that is not a sample or is
   * truncated/inconsistent (a malformed record must never be trusted for sizes).
   */
  public PerfSample parse(PerfRecord r) {
    if (r.type() != PerfConstants.RECORD_SAMPLE) {
      throw new IllegalArgumentException("not a sample record: type " + r.type());
    }
    ByteBuffer b = r.buffer();
    try {
      long id = 0;
      if (has(PerfConstants.SAMPLE_IDENTIFIER)) {
        id = b.getLong();
      }
      long ip = has(PerfConstants.SAMPLE_IP) ? b.getLong() : 0;
      int pid = 0;
      int tid = 0;
      if (has(PerfConstants.SAMPLE_TID)) {
        pid = b.getInt();
        tid = b.getInt();
      }
      long time = has(PerfConstants.SAMPLE_TIME) ? b.getLong() : 0;
      long addr = has(PerfConstants.SAMPLE_ADDR) ? b.getLong() : 0;
      if (has(PerfConstants.SAMPLE_ID)) {
        id = b.getLong();
      }
      if (has(PerfConstants.SAMPLE_STREAM_ID)) {
        b.getLong();
      }
      int cpu = 0;
      if (has(PerfConstants.SAMPLE_CPU)) {
        cpu = b.getInt();
        b.getInt(); // res
      }
      long period = has(PerfConstants.SAMPLE_PERIOD) ? b.getLong() : 0;
      long[] chain = new long[0];
      if (has(PerfConstants.SAMPLE_CALLCHAIN)) {
        chain = new long[boundedCount(b.getLong(), b.remaining() / 8)];
        for (int i = 0; i < chain.length; i++) {
          chain[i] = b.getLong();
        }
      }
      long abi = 0;
      long[] regs = new long[0];
      if (has(PerfConstants.SAMPLE_REGS_USER)) {
        abi = b.getLong();
        // ABI_NONE (e.g. a sample taken in a kernel thread) carries no register values.
        if (abi != 0) {
          regs = new long[Long.bitCount(regsMask)];
          for (int i = 0; i < regs.length; i++) {
            regs[i] = b.getLong();
          }
        }
      }
      byte[] stack = new byte[0];
      long dyn = 0;
      if (has(PerfConstants.SAMPLE_STACK_USER)) {
        int size = boundedCount(b.getLong(), b.remaining());
        if (size > 0) {
          stack = new byte[size];
          b.get(stack);
          dyn = b.getLong();
          if (dyn < 0 || dyn > size) {
            throw new IllegalArgumentException("stack dyn_size " + dyn + " > size " + size);
          }
        }
      }
      return new PerfSample(ip, pid, tid, time, addr, id, cpu, period, chain, abi, regs, stack, dyn);
    } catch (BufferUnderflowException e) {
      throw new IllegalArgumentException("truncated sample record of " + r.size() + " bytes", e);
    }
  }

  private boolean has(long bit) {
    return (sampleType & bit) != 0;
  }

  private static int boundedCount(long n, int max) {
    if (n < 0 || n > max) {
      throw new IllegalArgumentException("count " + n + " exceeds record (" + max + ")");
    }
    return (int) n;
  }
}
