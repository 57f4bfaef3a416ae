package dev.polystack.host.session;

import dev.polystack.host.launch.Credentials;
import dev.polystack.host.sampling.SamplingException;
import dev.polystack.host.sampling.SamplingOptions;
import java.util.List;
import java.util.function.BooleanSupplier;
import java.util.function.IntConsumer;

/**
 * How one backend records a target: {@link PtraceSession} stops each sampled thread; bpf and
 * perf modes, which never do, record on the host-wide pipeline ({@link PipelineRecord}).
 * {@link RecordSession} chooses one per run.
 */
interface BackendSession {

  /** Samples the running process {@code pid} until the duration, {@code stop} or its exit. */
  RecordSession.Result attach(int pid, SamplingOptions options, BooleanSupplier stop,
      RecordSession.Progress progress) throws SamplingException;

  /**
   * Launches {@code command} as {@code as} (null: polystack's user), hands its pid to
   * {@code started} while it stands in its exec, and samples it from its first instruction.
   */
  RecordSession.Result launch(List<String> command, Credentials as, SamplingOptions options,
      BooleanSupplier stop, RecordSession.Progress progress, IntConsumer started)
      throws SamplingException;
}
