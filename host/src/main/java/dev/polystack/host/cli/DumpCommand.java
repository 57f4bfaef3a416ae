package dev.polystack.host.cli;

import com.google.inject.Inject;
import dev.polystack.host.plugins.PluginGuard;
import dev.polystack.host.plugins.PluginLoader;
import dev.polystack.host.proc.ProcFs;
import dev.polystack.host.sampling.DumpSession;
import dev.polystack.host.sampling.SamplingException;
import dev.polystack.otel.model.FrameLabels;
import dev.polystack.otel.model.Recording;
import dev.polystack.otel.model.TargetInfo;
import dev.polystack.plugin.api.Frame;
import java.io.PrintWriter;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParentCommand;

/** {@code polystack dump}: the stacks of every thread of a process, once. */
@Command(
    name = "dump",
    mixinStandardHelpOptions = true,
    description = "Print one consistent snapshot of every thread's stack, then detach.")
final class DumpCommand implements Runnable {

  @Option(names = "--pid", paramLabel = "PID", required = true, description = "The process.")
  int pid;

  @Option(names = "--json", description = "One JSON document instead of text.")
  boolean json;

  @Option(names = "--max-depth", paramLabel = "N", defaultValue = "512",
      description = "Frames per stack (default: ${DEFAULT-VALUE}).")
  int maxDepth;

  @ParentCommand PolystackCommand parent;

  private final PluginLoader loader;
  private final PluginGuard guard;
  private final Console console;

  @Inject
  DumpCommand(PluginLoader loader, PluginGuard guard, Console console) {
    this.loader = loader;
    this.guard = guard;
    this.console = console;
  }

  @Override
  public void run() {
    if (pid <= 0) {
      throw new UsageException("--pid " + pid + ": a process id is a positive number");
    }
    if (maxDepth < 1 || maxDepth > 65_536) {
      throw new UsageException("--max-depth must be 1..65536, got " + maxDepth);
    }
    var registry = PolystackCommand.loadPlugins(loader, parent.pluginPath, console);
    DumpSession.Dump dump;
    try {
      dump = new DumpSession(ProcFs.system(), registry, guard, console::warn).dump(pid, maxDepth);
    } catch (SamplingException e) {
      throw new CommandFailedException(e.getMessage());
    }
    Recording labels = new Recording(new TargetInfo(pid, "", List.of()), 0, 0, 1, "dump",
        dump.modules(), List.of(), Map.of());
    PrintWriter out = console.out();
    if (json) {
      out.println(toJson(dump));
    } else {
      out.println("Process " + pid);
      for (DumpSession.ThreadDump t : dump.threads()) {
        out.println();
        out.println("Thread " + t.tid() + " \"" + t.name() + "\" (" + t.state() + ")");
        for (Frame f : t.frames()) {
          out.println("    " + FrameLabels.label(f, labels) + moduleSuffix(f));
        }
      }
    }
    out.flush();
    if (!dump.losses().isEmpty()) {
      console.warn("not captured: " + dump.losses().entrySet().stream()
          .map(e -> e.getKey() + " " + e.getValue()).collect(Collectors.joining(", ")));
    }
  }

  private static String moduleSuffix(Frame f) {
    if (!Frame.NATIVE.equals(f.type()) || f.module().isEmpty() || f.function().isEmpty()) {
      return "";
    }
    int slash = f.module().lastIndexOf('/');
    return "  (" + f.module().substring(slash + 1) + ")";
  }

  private static String toJson(DumpSession.Dump dump) {
    String threads = dump.threads().stream().map(t -> "{\"tid\":" + t.tid()
        + ",\"name\":" + Json.quote(t.name())
        + ",\"state\":" + Json.quote(t.state())
        + ",\"frames\":" + t.frames().stream().map(DumpCommand::toJson)
            .collect(Collectors.joining(",", "[", "]")) + "}")
        .collect(Collectors.joining(",", "[", "]"));
    return "{\"pid\":" + dump.pid() + ",\"threads\":" + threads + "}";
  }

  private static String toJson(Frame f) {
    return "{\"type\":" + Json.quote(f.type())
        + ",\"function\":" + Json.quote(f.function())
        + ",\"file\":" + Json.quote(f.file())
        + ",\"line\":" + f.line()
        + ",\"start_line\":" + f.startLine()
        + ",\"module\":" + Json.quote(f.module())
        + ",\"address\":" + Json.quote("0x" + Long.toHexString(f.address())) + "}";
  }
}
