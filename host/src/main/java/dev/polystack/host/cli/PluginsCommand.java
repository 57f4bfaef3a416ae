package dev.polystack.host.cli;

import com.google.inject.Inject;
import dev.polystack.host.plugins.LoadedPlugin;
import dev.polystack.host.plugins.PluginLoader;
import dev.polystack.host.plugins.PluginRegistry;
import dev.polystack.plugin.api.Capability;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Collectors;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParentCommand;

/** {@code polystack plugins}: what is loaded, from where, with which API and capabilities. */
@Command(
    name = "plugins",
    mixinStandardHelpOptions = true,
    description = "List the loaded plug-ins: id, version, API version, frame type, capabilities.")
final class PluginsCommand implements Runnable {

  private final PluginLoader loader;
  private final Console console;

  @ParentCommand PolystackCommand parent;

  @Option(names = "--json", description = "One JSON object per plug-in, one per line.")
  boolean json;

  @Inject
  PluginsCommand(PluginLoader loader, Console console) {
    this.loader = loader;
    this.console = console;
  }

  @Override
  public void run() {
    PluginRegistry registry = PolystackCommand.loadPlugins(loader, parent.pluginPath, console);
    PrintWriter out = console.out();
    if (json) {
      registry.plugins().forEach(p -> out.println(toJson(p)));
    } else {
      printTable(out, registry.plugins());
    }
    out.flush();
  }

  private static void printTable(PrintWriter out, List<LoadedPlugin> plugins) {
    List<String[]> rows = new ArrayList<>();
    rows.add(new String[] {"ID", "VERSION", "API", "KIND", "FRAME TYPE", "CAPABILITIES", "SOURCE"});
    for (LoadedPlugin p : plugins) {
      var d = p.descriptor();
      rows.add(new String[] {
        d.id(), d.version(), d.apiVersion().toString(), p.kind(),
        d.frameType().isEmpty() ? "-" : d.frameType(), capabilities(p), p.source()
      });
    }
    int[] widths = new int[rows.get(0).length];
    for (String[] row : rows) {
      for (int i = 0; i < row.length; i++) {
        widths[i] = Math.max(widths[i], row[i].length());
      }
    }
    for (String[] row : rows) {
      StringBuilder line = new StringBuilder();
      for (int i = 0; i < row.length; i++) {
        line.append(i == row.length - 1 ? row[i] : String.format("%-" + widths[i] + "s  ", row[i]));
      }
      out.println(line.toString().stripTrailing());
    }
  }

  private static String capabilities(LoadedPlugin p) {
    return p.descriptor().capabilities().stream()
        .map(Capability::displayName)
        .collect(Collectors.joining(","));
  }

  private static String toJson(LoadedPlugin p) {
    var d = p.descriptor();
    String caps = d.capabilities().stream()
        .map(c -> Json.quote(c.displayName()))
        .collect(Collectors.joining(",", "[", "]"));
    return "{\"id\":" + Json.quote(d.id())
        + ",\"version\":" + Json.quote(d.version())
        + ",\"api_version\":" + Json.quote(d.apiVersion().toString())
        + ",\"kind\":" + Json.quote(p.kind())
        + ",\"frame_type\":" + (d.frameType().isEmpty() ? "null" : Json.quote(d.frameType()))
        + ",\"capabilities\":" + caps
        + ",\"description\":" + Json.quote(d.description())
        + ",\"source\":" + Json.quote(p.source()) + "}";
  }
}
