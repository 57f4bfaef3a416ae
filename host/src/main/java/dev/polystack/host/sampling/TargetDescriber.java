package dev.polystack.host.sampling;

import dev.polystack.host.proc.ProcFs;
import dev.polystack.host.proc.ProcReadException;
import dev.polystack.host.proc.ProcessView;
import dev.polystack.otel.model.TargetInfo;
import java.util.List;

/**
 * What the OTLP resource and the local outputs say about a target process: its pid, executable
 * and arguments, read from /proc. Both the sampler and the vDSO tracer's exporter use it.
 */
public final class TargetDescriber {
  private TargetDescriber() {}

  /** Reads what /proc still has; a vanished or kernel process gives empty fields, not an error. */
  public static TargetInfo describe(ProcFs proc, int pid) {
    ProcessView view = proc.forPid(pid);
    String exe = "";
    List<String> args = List.of();
    try {
      exe = view.exe().replace(" (deleted)", "");
    } catch (ProcReadException e) {
      // keep empty: the command line still names the program
    }
    try {
      args = view.cmdline().arguments();
    } catch (ProcReadException e) {
      // a kernel thread or a vanished process has no command line; the pid still identifies it
    }
    return new TargetInfo(pid, exe, args);
  }
}
