package dev.polystack.host.cli;

import com.google.inject.Inject;
import dev.polystack.host.plugins.PluginGuard;
import dev.polystack.host.plugins.PluginLoader;
import dev.polystack.host.proc.ProcFs;
import dev.polystack.host.sampling.SamplingException;
import dev.polystack.host.session.DumpSession;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParentCommand;

/** {@code polystack dump}: the stacks of every thread of a process, once. */
@Command(
    name = "dump",
    mixinStandardHelpOptions = true,
    description = "Print one consistent snapshot of every thread's stack, then detach.")
final class DumpCommand implements Runnable {

  @Mixin StoppedTarget target;

  @Option(names = "--json", description = "One JSON document instead of text.")
  boolean json;


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
    target.validate();
    int pid = target.resolve(ProcFs.system(), console);
    var registry = PolystackCommand.loadPlugins(loader, parent.pluginPath, console);
    DumpSession.Dump dump;
    try {
      dump = new DumpSession(ProcFs.system(), registry, guard, console::warn)
          .dump(pid, target.maxDepth);
    } catch (SamplingException e) {
      throw new CommandFailedException(e.getMessage());
    }
    DumpFormat.print(dump, json, console);
  }
}
