package dev.polystack.host.cli;

import com.google.inject.Inject;
import dev.polystack.host.plugins.PluginGuard;
import dev.polystack.host.plugins.PluginLoader;
import dev.polystack.host.proc.ProcFs;
import dev.polystack.host.sampling.DumpSession;
import dev.polystack.host.sampling.SamplingException;
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
    DumpFormat.print(dump, json, console);
  }
}
