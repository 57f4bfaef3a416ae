package dev.polystack.host.cli;

import dev.polystack.host.plugins.PluginLoader;
import dev.polystack.host.plugins.PluginPathException;
import dev.polystack.host.plugins.PluginRegistry;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.ScopeType;

/** {@code polystack}: the top-level command; its subcommands do the work. */
@Command(
    name = "polystack",
    mixinStandardHelpOptions = true,
    versionProvider = PolystackCommand.Version.class,
    description = "Samples and traces other processes from the outside; runtime plug-ins add"
        + " Lua/JIT frames and vDSO call tracing.",
    subcommands = {RecordCommand.class, TopCommand.class, AgentCommand.class, DumpCommand.class,
        SnapshotCommand.class, AnalyzeCommand.class, PluginsCommand.class, InspectCommand.class,
        VdsoCommand.class, ProbeCommand.class, DemoCommand.class, CommandLine.HelpCommand.class})
final class PolystackCommand implements Runnable {

  @Option(
      names = "--plugin-path",
      split = ":",
      paramLabel = "DIR",
      scope = ScopeType.INHERIT,
      description = "Directories with plug-in jars to load besides the bundled ones"
          + " (repeat or separate with ':').")
  List<Path> pluginPath = new ArrayList<>();

  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  @Override
  public void run() {
    throw new CommandLine.ParameterException(spec.commandLine(), "missing command");
  }

  /** Loads plug-ins for a subcommand; a bad --plugin-path is a usage error. */
  static PluginRegistry loadPlugins(PluginLoader loader, List<Path> pluginPath, Console console) {
    PluginRegistry registry;
    try {
      registry = loader.load(pluginPath);
    } catch (PluginPathException e) {
      throw new UsageException(e.getMessage());
    }
    registry.refusals().forEach(r -> console.warn("refused plug-in " + r));
    registry.warnings().forEach(console::warn);
    return registry;
  }

  static final class Version implements CommandLine.IVersionProvider {
    @Override
    public String[] getVersion() {
      String v = PolystackCommand.class.getPackage().getImplementationVersion();
      return new String[] {"polystack " + (v == null ? "(development build)" : v)
          + ", plug-in API " + dev.polystack.plugin.api.ApiVersion.CURRENT};
    }
  }
}
