package dev.polystack.host.perf;

/**
 * A decoded PERF_RECORD_SAMPLE. Fields absent from the event's sample_type are 0 / empty. {@code
 * regs} holds one value per bit of sample_regs_user in bit order; {@code stack} is the copied user
 * stack of which the first {@code stackDynSize} bytes are valid.
 */
public record PerfSample(
    long ip,
    int pid,
    int tid,
    long time,
    long addr,
    long id,
    int cpu,
    long period,
    long[] callchain,
    long regsAbi,
    long[] regs,
    byte[] stack,
    long stackDynSize) {

  /** Register value for a PerfConstants.REG_* index given the mask used when sampling. */
  public long reg(long mask, int regIndex) {
    if ((mask & (1L << regIndex)) == 0) {
      throw new IllegalArgumentException("register " + regIndex + " not in mask");
    }
    return regs[Long.bitCount(mask & ((1L << regIndex) - 1))];
  }
}
