package dev.polystack.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.polystack.plugin.api.Plugin;
import dev.polystack.plugin.api.kit.Conformance;
import dev.polystack.plugin.api.kit.SnapshotCase;
import java.io.File;
import java.io.OutputStream;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.jar.JarEntry;
import java.util.function.UnaryOperator;
import java.util.jar.JarOutputStream;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import javax.tools.ToolProvider;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The example out-of-tree plug-in of docs/examples/toy-plugin, as its author would ship it:
 * compiled with javac against the plugin-api jar alone, packed with its ServiceLoader file,
 * dropped into --plugin-path, and run on the toy interpreter it knows (compiled from the same
 * folder with gcc). Its script frames must replace the interpreter loop's native frame, between
 * the native builtin it called and the native main that called it; and it must pass the author
 * kit on a snapshot of the real process, its capture plan's coverage included.
 */
class ExamplePluginTest {
  private static final Pattern LABEL = Pattern.compile("^\\s*([\\w.]+):\\s+(\\S.*)$");
  private static final Path EXAMPLE = Distribution.root().resolve("docs/examples/toy-plugin");
  @TempDir static Path dir;
  private static Path pluginDir;
  private static Path toy;

  @BeforeAll
  static void build() throws Exception {
    pluginDir = Files.createDirectories(dir.resolve("plugins"));
    buildJar(pluginDir.resolve("toy-plugin.jar"), source -> source);
    toy = dir.resolve("toy_interp");
    var gcc = Tools.run(120, null, List.of("gcc", "-O2", "-rdynamic",
        "-fno-optimize-sibling-calls", "-Wall", "-o", toy.toString(),
        EXAMPLE.resolve("toy_interp.c").toString()));
    assertEquals(0, gcc.exitCode(), gcc.stderr());
  }

  /** Compiles the example's sources, each through {@code edit}, into {@code jar}. */
  private static void buildJar(Path jar, UnaryOperator<String> edit) throws Exception {
    Path work = Files.createTempDirectory(dir, "build");
    Path classes = Files.createDirectories(work.resolve("classes"));
    List<String> args = new ArrayList<>(List.of("--release", "17", "-Xlint:all", "-Werror",
        "-d", classes.toString(), "-classpath", pluginApiOnly()));
    try (Stream<Path> sources = Files.walk(EXAMPLE.resolve("src"))) {
      for (Path p : sources.filter(f -> f.toString().endsWith(".java")).toList()) {
        Path edited = work.resolve("src").resolve(EXAMPLE.resolve("src").relativize(p));
        Files.createDirectories(edited.getParent());
        Files.writeString(edited, edit.apply(Files.readString(p)));
        args.add(edited.toString());
      }
    }
    var err = new java.io.ByteArrayOutputStream();
    int rc = ToolProvider.getSystemJavaCompiler().run(null, err, err, args.toArray(String[]::new));
    assertEquals(0, rc, "the example does not compile against plugin-api alone:\n" + err);
    try (OutputStream file = Files.newOutputStream(jar);
        JarOutputStream out = new JarOutputStream(file);
        Stream<Path> walk = Stream.concat(Files.walk(classes),
            Files.walk(EXAMPLE.resolve("META-INF")))) {
      for (Path p : walk.filter(Files::isRegularFile).toList()) {
        Path base = p.startsWith(classes) ? classes : EXAMPLE;
        out.putNextEntry(new JarEntry(base.relativize(p).toString()));
        out.write(Files.readAllBytes(p));
        out.closeEntry();
      }
    }
    PluginJars.installSafely(jar);
  }

  /** The plugin-api classes and nothing else from the build, as a third party has them. */
  private static String pluginApiOnly() {
    for (String entry : System.getProperty("java.class.path").split(File.pathSeparator)) {
      Path p = Path.of(entry);
      boolean api = p.toString().contains("plugin-api") && !p.toString().contains("test");
      if (api && (p.toString().endsWith(".jar") || Files.isDirectory(p))) {
        return entry;
      }
    }
    throw new AssertionError("plugin-api is not on the test class path");
  }

  @Test
  void scriptFramesReplaceTheInterpreterLoopBetweenNativeFrames() throws Exception {
    try (Target target = Target.start(toy)) {
      // In its builtin's sleep: where the frames under test are.
      Awaits.blockedIn(target.pid(), java.util.Set.of(Awaits.NANOSLEEP, Awaits.CLOCK_NANOSLEEP),
          20_000);
      var result = Distribution.run("--plugin-path", pluginDir.toString(), "dump", "--pid",
          Integer.toString(target.pid()));

      assertEquals(0, result.exitCode(), result.stderr());
      List<String> frames = result.stdout().lines().filter(l -> l.startsWith("    "))
          .map(String::strip).toList();
      int builtin = index(frames, "toy_native_sleep  (toy_interp)", result.stdout());
      int render = index(frames, "render_page (toy-script:27)", result.stdout());
      int load = index(frames, "load_config (toy-script:12)", result.stdout());
      int script = index(frames, "main (toy-script:3)", result.stdout());
      int main = index(frames, "main  (toy_interp)", result.stdout());
      assertEquals(List.of(builtin + 1, render + 1, load + 1, script + 1),
          List.of(render, load, script, main), "script frames must sit exactly where the"
              + " interpreter loop was:\n" + result.stdout());
      assertFalse(result.stdout().contains("toy_interp_run"),
          "the interpreter loop's native frame must be replaced:\n" + result.stdout());
      assertTrue(target.isAlive(), "the target must survive");
    }
  }

  /**
   * A build that does not declare WALK_FRAMES is never asked for a walker (API 2.0): its
   * module's code stays the native frame it is, with no error frame in its place.
   */
  @Test
  void withoutWalkFramesTheInterpreterLoopStaysNative() throws Exception {
    Path plain = Files.createDirectories(dir.resolve("no-walk-plugins"));
    buildJar(plain.resolve("toy-plugin.jar"), source -> source.replace(
        "Capability.DISCOVER_OFFSETS, Capability.WALK_FRAMES,", "Capability.DISCOVER_OFFSETS,"));
    try (Target target = Target.start(toy)) {
      Awaits.blockedIn(target.pid(), java.util.Set.of(Awaits.NANOSLEEP, Awaits.CLOCK_NANOSLEEP),
          20_000);
      var result = Distribution.run("--plugin-path", plain.toString(), "dump", "--pid",
          Integer.toString(target.pid()));

      assertEquals(0, result.exitCode(), result.stderr());
      assertTrue(result.stdout().contains("toy_interp_run  (toy_interp)"), result.stdout());
      assertFalse(result.stdout().contains("render_page") || result.stdout().contains("[error"),
          result.stdout());
    }
  }

  @Test
  void passesTheAuthorKitOnASnapshotOfTheRealProcess() throws Exception {
    Path snapshot = dir.resolve("toy-spin.psnap");
    try (Target target = Target.start(toy, "spin")) {
      Awaits.cpuTicks(target.pid(), 2, 20_000); // past the loader, spinning in the script
      Distribution.Result result = null;
      // On a host loaded far beyond its cores a thread may not stop within the snapshot's stop
      // timeout; the snapshot then reports it as lost. A few tries, each checked in full.
      for (int attempt = 0; attempt < 3; attempt++) {
        result = Distribution.run("--plugin-path", pluginDir.toString(), "snapshot", "--pid",
            Integer.toString(target.pid()), "-o", snapshot.toString(), "--embed-modules");
        assertEquals(0, result.exitCode(), result.stderr());
        if (result.stdout().contains("render_page (toy-script:27)")) {
          break;
        }
      }
      assertTrue(result.stdout().contains("render_page (toy-script:27)"),
          result.stdout() + result.stderr());
    }
    try (URLClassLoader loader = new URLClassLoader(
        new URL[] {pluginDir.resolve("toy-plugin.jar").toUri().toURL()},
        Plugin.class.getClassLoader())) {
      Class<? extends Plugin> type =
          loader.loadClass("example.toy.ToyPlugin").asSubclass(Plugin.class);
      Conformance kit = Conformance.of(() -> {
        try {
          return type.getConstructor().newInstance();
        } catch (ReflectiveOperationException e) {
          throw new AssertionError(e);
        }
      });
      assertEquals("toy", kit.checkDescriptor().id());
      var report = kit.checkCase(SnapshotCase.read(snapshot, List.of()));
      assertEquals(1, report.walks(), report.toString());
      assertEquals(3, report.runtimeFrames(), report.toString());
      assertTrue(report.faultsInjected() >= 2 * report.maxReads(), report.toString());
      // Its capture plan copies toy_state, all the walk reads besides the names' literals,
      // which it reads through stable(): the kit's plan coverage check holds it to that.
      var coverage = kit.checkPlanCoverage(SnapshotCase.read(snapshot, List.of()));
      assertEquals(1, coverage.copies(), coverage.toString());
      assertTrue(coverage.checkedSegments() >= 1 && coverage.coveredReads() >= 2
          && coverage.stableReads() >= 3, coverage.toString());
    }
  }

  /**
   * Its sample attribute reaches pprof as a numeric label, on the samples in the script; a
   * build whose key is outside its namespace has it refused, with one line and no label.
   */
  @Test
  void sampleAttributeReachesPprofAndOneOutsideTheNamespaceIsRefused() throws Exception {
    assertEquals(List.of("toy.depth=3"), recordLabels(pluginDir).stream()
        .filter(l -> l.startsWith("toy.")).distinct().toList());

    Path foreign = Files.createDirectories(dir.resolve("foreign-plugins"));
    buildJar(foreign.resolve("toy-plugin.jar"),
        source -> source.replace("ToyPlugin.ID + \".depth\"", "\"other.depth\""));
    List<String> refused = recordLabels(foreign);
    assertFalse(refused.stream().anyMatch(l -> l.contains("depth")), refused.toString());
  }

  /**
   * The labels {@code go tool pprof -traces} shows for a short record of the spinning toy;
   * checks the run's warnings on the way (the refusal line when the key is foreign).
   */
  private static List<String> recordLabels(Path plugins) throws Exception {
    Path pprof = Files.createTempDirectory(dir, "record").resolve("toy.pb.gz");
    var result = Distribution.run("--plugin-path", plugins.toString(), "record", "--duration",
        "1", "-o", pprof.toString(), "--", toy.toString(), "spin");
    assertEquals(0, result.exitCode(), result.stderr());
    boolean foreign = !plugins.equals(pluginDir);
    assertEquals(foreign, result.stderr().contains("polystack: warning: plug-in 'toy' gave a"
        + " refused answer in walk: sample attribute 'other.depth' is outside its namespace"
        + " 'toy.'"), result.stderr());
    var traces = Tools.run(300, null, List.of(Tools.go(), "tool", "pprof", "-traces",
        pprof.toString()));
    assertEquals(0, traces.exitCode(), traces.stderr());
    assertTrue(traces.stdout().contains("render_page"), traces.stdout());
    // A sample's labels print a line each above its stack: " toy.depth:  3".
    List<String> labels = new ArrayList<>();
    for (String line : traces.stdout().lines().toList()) {
      Matcher label = LABEL.matcher(line);
      if (label.matches()) {
        labels.add(label.group(1) + "=" + label.group(2));
      }
    }
    return labels;
  }

  private static int index(List<String> frames, String frame, String all) {
    int i = frames.indexOf(frame);
    assertTrue(i >= 0, "no frame '" + frame + "' in:\n" + all);
    return i;
  }
}
