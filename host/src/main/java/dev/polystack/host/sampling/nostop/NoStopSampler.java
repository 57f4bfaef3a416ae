package dev.polystack.host.sampling.nostop;

import dev.polystack.host.proc.ProcFs;
import dev.polystack.host.sampling.SamplerOutcome;
import dev.polystack.host.sampling.SamplingException;
import dev.polystack.host.sampling.TargetExit;
import dev.polystack.host.sys.SyscallException;
import java.util.function.BooleanSupplier;

/**
 * A sampling loop that never stops the target (bpf and perf modes). The record session calls
 * it in this order: open, place, release the target, run; so no tick of the target is missed.
 */
public interface NoStopSampler extends AutoCloseable {

  /** Starts sampling every wanted thread; fails in one line if the target cannot be sampled. */
  void openAll() throws SamplingException;

  /** Keeps polystack's threads off the CPUs the target last ran on, before it is let go. */
  void placeBeforeStart(ProcFs proc);

  /** Samples until {@code stop}, the duration's end or the target's exit. */
  SamplerOutcome run(BooleanSupplier stop, TargetExit exit) throws SyscallException;

  @Override
  void close();
}
