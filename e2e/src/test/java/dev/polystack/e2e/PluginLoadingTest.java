package dev.polystack.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Plug-ins from jars in a --plugin-path directory, as a third party ships them. */
class PluginLoadingTest {

  @TempDir Path dir;

  @Test
  void discoversAPluginJarThroughPluginPath() throws Exception {
    Path jar = PluginJars.build(dir.resolve("acme.jar"),
        Map.of("example.AcmePlugin", PluginJars.runtimePlugin(
            "AcmePlugin", "acme", "1.0", "return Inspection.notMine();")),
        List.of("example.AcmePlugin"));

    var result = Distribution.run("--plugin-path", dir.toString(), "plugins");

    assertEquals(0, result.exitCode(), result.stderr());
    String row = result.stdout().lines().filter(l -> l.startsWith("acme ")).findFirst()
        .orElseThrow(() -> new AssertionError("acme not listed:\n" + result.stdout()));
    assertTrue(row.matches("acme\\s+9\\.9\\.9\\s+1\\.0\\s+runtime\\s+acme\\s+detect\\s+.*acme\\.jar"),
        row);
    assertTrue(row.endsWith(jar.toString()), row);
    // The bundled plug-ins are still there.
    assertTrue(result.stdout().lines().anyMatch(l -> l.startsWith("luajit ")), result.stdout());
    assertTrue(result.stdout().lines().anyMatch(l -> l.startsWith("vdso ")), result.stdout());
    assertEquals("", result.stderr());
  }

  @Test
  void refusesAnotherApiMajorWithAMessage() throws Exception {
    PluginJars.build(dir.resolve("future.jar"),
        Map.of("example.FuturePlugin", PluginJars.runtimePlugin(
            "FuturePlugin", "future", "2.0", "return Inspection.notMine();")),
        List.of("example.FuturePlugin"));

    var result = Distribution.run("plugins", "--plugin-path", dir.toString());

    assertEquals(0, result.exitCode());
    assertFalse(result.stdout().contains("future"), result.stdout());
    assertEquals(List.of("polystack: warning: refused plug-in " + dir.resolve("future.jar")
            + ": plug-in 'future' needs plug-in API 2.0 but this host provides 1.2;"
            + " use a build of the plug-in for API 1.x (minor <= 2)"),
        result.stderrLines());
  }

  @Test
  void refusesANewerMinorAndAcceptsAnOlderOne() throws Exception {
    PluginJars.build(dir.resolve("newer.jar"),
        Map.of("example.NewerPlugin", PluginJars.runtimePlugin(
            "NewerPlugin", "newer", "1.7", "return Inspection.notMine();")),
        List.of("example.NewerPlugin"));

    var result = Distribution.run("plugins", "--plugin-path", dir.toString());

    assertEquals(1, result.stderrLines().size(), result.stderr());
    assertTrue(result.stderr().contains("plug-in 'newer' needs plug-in API 1.7"), result.stderr());
  }

  @Test
  void aPluginThatThrowsAtStartIsRefusedNotFatal() throws Exception {
    String broken = """
        package example;
        import dev.polystack.plugin.api.*;
        public final class BrokenPlugin implements RuntimePlugin {
          public PluginDescriptor descriptor() { throw new IllegalStateException("boom"); }
          public Inspection inspect(ModuleImage image) { return Inspection.notMine(); }
        }
        """;
    PluginJars.build(dir.resolve("broken.jar"), Map.of("example.BrokenPlugin", broken),
        List.of("example.BrokenPlugin"));
    PluginJars.build(dir.resolve("ok.jar"),
        Map.of("example.OkPlugin", PluginJars.runtimePlugin(
            "OkPlugin", "okay", "1.0", "return Inspection.notMine();")),
        List.of("example.OkPlugin"));

    var result = Distribution.run("plugins", "--plugin-path", dir.toString());

    assertEquals(0, result.exitCode());
    assertTrue(result.stdout().lines().anyMatch(l -> l.startsWith("okay ")), result.stdout());
    assertEquals(1, result.stderrLines().size(), result.stderr());
    assertTrue(result.stderr().contains(
        "plug-in example.BrokenPlugin failed to start: IllegalStateException: boom"),
        result.stderr());
    assertFalse(result.stderr().contains("\tat "), result.stderr());
  }

  @Test
  void aDuplicateIdIsRefused() throws Exception {
    PluginJars.build(dir.resolve("dup.jar"),
        Map.of("example.DupPlugin", PluginJars.runtimePlugin(
            "DupPlugin", "luajit", "1.0", "return Inspection.notMine();")),
        List.of("example.DupPlugin"));

    var result = Distribution.run("plugins", "--plugin-path", dir.toString());

    assertEquals(0, result.exitCode());
    assertTrue(result.stderr().contains(
        "plug-in id 'luajit' is already provided by class path; remove one of them"),
        result.stderr());
    assertTrue(result.stdout().lines().anyMatch(l -> l.startsWith("luajit ") && l.endsWith("class path")),
        result.stdout());
  }

  @Test
  void jsonListingHasOneObjectPerPlugin() throws Exception {
    var result = Distribution.run("plugins", "--json");

    assertEquals(0, result.exitCode(), result.stderr());
    List<String> lines = result.stdout().lines().toList();
    assertEquals(2, lines.size(), result.stdout());
    assertTrue(lines.get(0).startsWith("{\"id\":\"luajit\",\"version\":\""), lines.get(0));
    assertTrue(lines.get(0).contains("\"api_version\":\"1.2\""), lines.get(0));
    assertTrue(lines.get(0).contains("\"frame_type\":\"luajit\""), lines.get(0));
    assertTrue(lines.get(1).contains("\"capabilities\":[\"plan-probes\",\"decode-calls\"]"),
        lines.get(1));
  }
}
