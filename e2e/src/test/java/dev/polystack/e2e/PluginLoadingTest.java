package dev.polystack.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.polystack.plugin.api.ApiVersion;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
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
            "AcmePlugin", "acme", "2.0", "return Inspection.notMine();")),
        List.of("example.AcmePlugin"));

    var result = Distribution.run("--plugin-path", dir.toString(), "plugins");

    assertEquals(0, result.exitCode(), result.stderr());
    String row = result.stdout().lines().filter(l -> l.startsWith("acme ")).findFirst()
        .orElseThrow(() -> new AssertionError("acme not listed:\n" + result.stdout()));
    assertTrue(row.matches("acme\\s+9\\.9\\.9\\s+2\\.0\\s+runtime\\s+acme\\s+detect\\s+.*acme\\.jar"),
        row);
    assertTrue(row.endsWith(jar.toString()), row);
    // The bundled plug-ins are still there.
    assertTrue(result.stdout().lines().anyMatch(l -> l.startsWith("luajit ")), result.stdout());
    assertTrue(result.stdout().lines().anyMatch(l -> l.startsWith("vdso ")), result.stdout());
    // Run as root: third-party code in a privileged process is said, once.
    assertEquals(List.of(PluginJars.privilegeWarning(jar)), result.stderrLines());
  }

  @Test
  void refusesANewerApiMajorWithAMessage() throws Exception {
    assertRefused("future", PluginJars.runtimePlugin("FuturePlugin", "future", "3.0",
        "return Inspection.notMine();"), "plug-in 'future' needs plug-in API 3.0 but this host"
        + " provides " + ApiVersion.CURRENT + "; use a build of the plug-in for API 2.x (minor"
        + " <= " + ApiVersion.CURRENT.minor() + ")");
  }

  @Test
  void refusesA1xPluginSayingHowToRebuildIt() throws Exception {
    assertRefused("old", PluginJars.runtimePlugin("OldPlugin", "old", "1.10",
        "return Inspection.notMine();"), "plug-in 'old' needs plug-in API 1.10 but this host"
        + " provides " + ApiVersion.CURRENT + "; rebuild it against plugin-api 2.x"
        + " (docs/plugin-authoring.md, \"Moving to API 2.0\")");
  }

  @Test
  void refusesAPluginWhoseSampleTypeIsOutsideItsNamespace() throws Exception {
    String source = PluginJars.runtimePlugin("TypedPlugin", "typed", "2.0",
        "return Inspection.notMine();").replace("  @Override\n  public Inspection",
        "  @Override\n  public java.util.List<SampleType> sampleTypes() {\n"
            + "    return java.util.List.of(new SampleType(\"other.waits\", \"count\"));\n"
            + "  }\n\n  @Override\n  public Inspection");
    assertRefused("typed", source, "plug-in 'typed': sample type 'other.waits' is outside its"
        + " namespace 'typed.'; report it to the plug-in's author");
  }

  /**
   * Plug-in {@code id} (class {@code example.<Id>Plugin}, from {@code source}) is left out of
   * the listing with {@code reason} as its one line. Refused after its constructor ran (the
   * descriptor says why), so as root the run also says third-party code ran.
   */
  private void assertRefused(String id, String source, String reason) throws Exception {
    String className = "example." + Character.toUpperCase(id.charAt(0)) + id.substring(1)
        + "Plugin";
    Path jar = dir.resolve(id + ".jar");
    PluginJars.build(jar, Map.of(className, source), List.of(className));

    var result = Distribution.run("plugins", "--plugin-path", dir.toString());

    assertEquals(0, result.exitCode());
    assertFalse(result.stdout().contains(id + " "), result.stdout());
    assertEquals(List.of("polystack: warning: refused plug-in " + jar + ": " + reason,
        PluginJars.privilegeWarning(jar)), result.stderrLines());
  }

  @Test
  void refusesANewerMinorAndAcceptsAnOlderOne() throws Exception {
    String newer = ApiVersion.CURRENT.major() + "." + (ApiVersion.CURRENT.minor() + 1);
    PluginJars.build(dir.resolve("newer.jar"),
        Map.of("example.NewerPlugin", PluginJars.runtimePlugin(
            "NewerPlugin", "newer", newer, "return Inspection.notMine();")),
        List.of("example.NewerPlugin"));

    var result = Distribution.run("plugins", "--plugin-path", dir.toString());

    assertEquals(2, result.stderrLines().size(), result.stderr());
    assertTrue(result.stderr().contains("plug-in 'newer' needs plug-in API " + newer),
        result.stderr());
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
            "OkPlugin", "okay", "2.0", "return Inspection.notMine();")),
        List.of("example.OkPlugin"));

    var result = Distribution.run("plugins", "--plugin-path", dir.toString());

    assertEquals(0, result.exitCode());
    assertTrue(result.stdout().lines().anyMatch(l -> l.startsWith("okay ")), result.stdout());
    assertEquals(2, result.stderrLines().size(), result.stderr());
    // Both jars' code ran (the broken one's constructor did), so both are named.
    assertEquals(PluginJars.privilegeWarning(dir.resolve("broken.jar"), dir.resolve("ok.jar")),
        result.stderrLines().get(1));
    assertTrue(result.stderr().contains(
        "plug-in example.BrokenPlugin failed to start: IllegalStateException: boom"),
        result.stderr());
    assertFalse(result.stderr().contains("\tat "), result.stderr());
  }

  @Test
  void aDuplicateIdIsRefused() throws Exception {
    PluginJars.build(dir.resolve("dup.jar"),
        Map.of("example.DupPlugin", PluginJars.runtimePlugin(
            "DupPlugin", "luajit", "2.0", "return Inspection.notMine();")),
        List.of("example.DupPlugin"));

    var result = Distribution.run("plugins", "--plugin-path", dir.toString());

    assertEquals(0, result.exitCode());
    assertTrue(result.stderr().contains(
        "plug-in id 'luajit' is already provided by class path; remove one of them"),
        result.stderr());
    assertTrue(result.stdout().lines().anyMatch(l -> l.startsWith("luajit ") && l.endsWith("class path")),
        result.stdout());
  }

  /**
   * Issue 20's attack, through the real command: a world-writable directory holding a link to
   * a world-writable jar whose constructor leaves a marker. As root it is refused with one line
   * and none of its code runs, even for {@code plugins}, which only lists.
   */
  @Test
  void asRootAWorldWritableDirectoryWithALinkedJarIsRefusedBeforeItsCodeRuns() throws Exception {
    Path marker = dir.resolve("constructor-ran");
    Path elsewhere = Files.createDirectories(dir.resolve("elsewhere"));
    Path jar = PluginJars.build(elsewhere.resolve("evil.jar"),
        Map.of("example.EvilPlugin", """
            package example;
            import dev.polystack.plugin.api.*;
            public final class EvilPlugin implements RuntimePlugin {
              public EvilPlugin() throws java.io.IOException {
                java.nio.file.Files.writeString(java.nio.file.Path.of("%s"), "ran as root");
              }
              public PluginDescriptor descriptor() {
                return new PluginDescriptor("evil", "1", ApiVersion.CURRENT, "evil",
                    java.util.Set.of(Capability.DETECT), "evil");
              }
              public Inspection inspect(ModuleImage image) { return Inspection.notMine(); }
            }
            """.formatted(marker)),
        List.of("example.EvilPlugin"));
    Files.setPosixFilePermissions(jar, PosixFilePermissions.fromString("rw-rw-rw-"));
    Path shared = Files.createDirectories(dir.resolve("shared"));
    Files.setPosixFilePermissions(shared, PosixFilePermissions.fromString("rwxrwxrwx"));
    Files.createSymbolicLink(shared.resolve("tools.jar"), jar);

    var result = Distribution.run("--plugin-path", shared.toString(), "plugins");

    assertEquals(0, result.exitCode(), result.stderr());
    assertFalse(Files.exists(marker), "the plug-in's constructor ran as root");
    assertFalse(result.stdout().contains("evil"), result.stdout());
    assertEquals(1, result.stderrLines().size(), result.stderr());
    assertTrue(result.stderrLines().get(0).startsWith("polystack: warning: refused plug-in "
        + shared + ": plug-in directory is writable by group and others (mode 0777); nothing in"
        + " it was loaded;"), result.stderr());

    // The same jar, made root's and 0644, behind the link in a 0755 directory: the link alone
    // is refused.
    PluginJars.installSafely(jar);
    Files.setPosixFilePermissions(shared, PosixFilePermissions.fromString("rwxr-xr-x"));
    result = Distribution.run("--plugin-path", shared.toString(), "plugins");
    assertFalse(Files.exists(marker), "the plug-in's constructor ran as root");
    assertEquals(List.of("polystack: warning: refused plug-in " + shared.resolve("tools.jar")
        + ": is a symbolic link; as root polystack loads no jar through a link (its target could"
        + " be anyone's): copy the jar itself into the directory"), result.stderrLines());
  }

  @Test
  void jsonListingHasOneObjectPerPlugin() throws Exception {
    var result = Distribution.run("plugins", "--json");

    assertEquals(0, result.exitCode(), result.stderr());
    List<String> lines = result.stdout().lines().toList();
    assertEquals(2, lines.size(), result.stdout());
    assertTrue(lines.get(0).startsWith("{\"id\":\"luajit\",\"version\":\""), lines.get(0));
    assertTrue(lines.get(0).contains("\"api_version\":\"" + ApiVersion.CURRENT + "\""),
        lines.get(0));
    assertTrue(lines.get(0).contains("\"frame_type\":\"luajit\""), lines.get(0));
    assertTrue(lines.get(1).contains("\"capabilities\":[\"plan-probes\",\"decode-calls\"]"),
        lines.get(1));
  }
}
