package dev.polystack.host.plugins;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.polystack.host.sys.Credentials;
import dev.polystack.plugin.api.ApiVersion;
import java.io.IOException;
import java.io.OutputStream;
import java.io.StringWriter;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.jar.JarEntry;
import java.util.jar.JarOutputStream;
import java.util.stream.Stream;
import javax.tools.JavaCompiler;
import javax.tools.SimpleJavaFileObject;
import javax.tools.ToolProvider;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 20, "plug-ins run as root unchecked", reproduced: a plug-in whose constructor leaves a
 * marker file (standing for anything code run as root can do), offered through a world-
 * writable directory, a symbolic link, a jar others can write, a jar or parent directory owned
 * by another user. As root each is refused before any of its code runs, with one line naming
 * the file and the reason; a root-owned jar in a root-owned directory loads, with a warning.
 */
class PluginLoaderTrustTest {
  private static final Credentials ROOT = new Credentials(0, -1L);

  @TempDir Path dir;
  private Path marker;
  private Path jar;

  @BeforeEach
  void buildPlugin() throws Exception {
    assumeTrue(Credentials.ofThisProcess().root(), "the attack is on a root process");
    marker = dir.resolve("constructor-ran");
    jar = buildJar(dir.resolve("build"), marker);
  }

  private PluginRegistry load(Credentials credentials, Path pluginDir) throws Exception {
    return new PluginLoader(ApiVersion.CURRENT, PluginLoaderTrustTest.class.getClassLoader(),
        credentials).load(List.of(pluginDir));
  }

  /** A directory as root would make it: root-owned, 0755. */
  private Path secureDirectory(String name) throws IOException {
    Path d = Files.createDirectory(dir.resolve(name));
    Files.setPosixFilePermissions(d, PosixFilePermissions.fromString("rwxr-xr-x"));
    return d;
  }

  private Path copyJar(Path into, String mode) throws IOException {
    Path copy = Files.copy(jar, into.resolve("evil.jar"));
    Files.setPosixFilePermissions(copy, PosixFilePermissions.fromString(mode));
    return copy;
  }

  @Test
  void theReportedAttackAWorldWritableDirectoryWithALinkToAWorldWritableJar() throws Exception {
    Path shared = Files.createDirectory(dir.resolve("shared"));
    Files.setPosixFilePermissions(shared, PosixFilePermissions.fromString("rwxrwxrwx"));
    Path target = copyJar(Files.createDirectory(dir.resolve("elsewhere")), "rw-rw-rw-");
    Files.createSymbolicLink(shared.resolve("tools.jar"), target);

    PluginRegistry registry = load(ROOT, shared);

    assertFalse(Files.exists(marker), "the plug-in's constructor ran as root");
    assertEquals(1, registry.refusals().size(), registry.refusals().toString());
    assertEquals(shared + ": plug-in directory is writable by group and others (mode 0777);"
        + " nothing in it was loaded; as root polystack runs only plug-ins no other user can"
        + " change: install the jar root-owned and not group/other-writable in a directory that"
        + " is too (sudo install -o root -g root -m 0644 JAR /usr/local/lib/polystack/plugins/)",
        registry.refusals().get(0).toString());
    assertEquals(List.of(), registry.warnings());
    assertTrue(registry.byId("evil").isEmpty());
  }

  @Test
  void aSymlinkedJarIsRefusedEvenInASecureDirectory() throws Exception {
    Path plugins = secureDirectory("plugins");
    Path target = copyJar(secureDirectory("real"), "rw-r--r--");
    Path link = Files.createSymbolicLink(plugins.resolve("evil.jar"), target);

    PluginRegistry registry = load(ROOT, plugins);

    assertFalse(Files.exists(marker));
    assertEquals(List.of(new PluginRefusal(link.toString(), "is a symbolic link; as root"
        + " polystack loads no jar through a link (its target could be anyone's): copy the jar"
        + " itself into the directory")), registry.refusals());
  }

  @Test
  void aJarOthersCanWriteOrAnotherUserOwnsIsRefused() throws Exception {
    Path plugins = secureDirectory("plugins");
    Path evil = copyJar(plugins, "rw-rw-r--");
    PluginRegistry registry = load(ROOT, plugins);
    assertFalse(Files.exists(marker));
    assertEquals(1, registry.refusals().size());
    assertTrue(registry.refusals().get(0).toString().startsWith(evil
        + ": is writable by its group (mode 0664); as root"), registry.refusals().toString());

    Files.setPosixFilePermissions(evil, PosixFilePermissions.fromString("rw-r--r--"));
    Files.setAttribute(evil, "unix:uid", 4242);
    registry = load(ROOT, plugins);
    assertFalse(Files.exists(marker));
    assertTrue(registry.refusals().get(0).toString().startsWith(evil
        + ": is owned by uid 4242, not root;"), registry.refusals().toString());
  }

  @Test
  void aParentDirectoryAnotherUserOwnsIsRefused() throws Exception {
    Path home = secureDirectory("home");
    Files.setAttribute(home, "unix:uid", 4242);
    Path plugins = Files.createDirectory(home.resolve("plugins"));
    copyJar(plugins, "rw-r--r--");

    PluginRegistry registry = load(ROOT, plugins);

    assertFalse(Files.exists(marker));
    assertTrue(registry.refusals().get(0).toString().startsWith(plugins
        + ": its parent directory " + home + " is owned by uid 4242, not root; nothing in it"
        + " was loaded"), registry.refusals().toString());
  }

  @Test
  void aRootOwnedJarInARootOwnedDirectoryLoadsWithAWarning() throws Exception {
    Path plugins = secureDirectory("plugins");
    Path good = copyJar(plugins, "rw-r--r--");

    PluginRegistry registry = load(ROOT, plugins);

    assertEquals(List.of(), registry.refusals());
    assertTrue(registry.byId("evil").isPresent());
    assertTrue(Files.exists(marker));
    assertEquals(List.of("third-party plug-in code from " + good + " ran inside polystack, which"
        + " runs as root: it can do anything polystack can; load only plug-ins you trust"),
        registry.warnings());
  }

  @Test
  void withoutPrivilegesNothingIsCheckedOrWarned() throws Exception {
    Path plugins = secureDirectory("plugins");
    Path target = copyJar(secureDirectory("real"), "rw-rw-rw-");
    Files.createSymbolicLink(plugins.resolve("linked.jar"), target);

    PluginRegistry registry = load(new Credentials(1000, 0), plugins);

    assertEquals(List.of(), registry.refusals());
    assertEquals(List.of(), registry.warnings());
    assertTrue(registry.byId("evil").isPresent());
  }

  /** Compiles a runtime plug-in whose constructor creates {@code marker}, packed as a jar. */
  private static Path buildJar(Path work, Path marker) throws Exception {
    String source = """
        package example;

        import dev.polystack.plugin.api.*;
        import java.util.Set;

        public final class EvilPlugin implements RuntimePlugin {
          public EvilPlugin() throws java.io.IOException {
            java.nio.file.Files.writeString(java.nio.file.Path.of("%s"), "ran");
          }

          @Override
          public PluginDescriptor descriptor() {
            return new PluginDescriptor("evil", "1.0", ApiVersion.CURRENT, "evil",
                Set.of(Capability.DETECT), "a plug-in that must not run");
          }

          @Override
          public Inspection inspect(ModuleImage image) {
            return Inspection.notMine();
          }
        }
        """.formatted(marker);
    Path classes = Files.createDirectories(work.resolve("classes"));
    JavaCompiler compiler = ToolProvider.getSystemJavaCompiler();
    StringWriter diagnostics = new StringWriter();
    var unit = new SimpleJavaFileObject(URI.create("string:///example/EvilPlugin.java"),
        SimpleJavaFileObject.Kind.SOURCE) {
      @Override
      public CharSequence getCharContent(boolean ignoreEncodingErrors) {
        return source;
      }
    };
    boolean ok = compiler.getTask(diagnostics, null, null, List.of("-d", classes.toString(),
        "--release", "17", "-classpath", System.getProperty("java.class.path")), null,
        List.of(unit)).call();
    assertTrue(ok, diagnostics.toString());
    Path jar = work.resolve("evil.jar");
    try (OutputStream file = Files.newOutputStream(jar);
        JarOutputStream out = new JarOutputStream(file);
        Stream<Path> walk = Files.walk(classes)) {
      for (Path p : walk.filter(Files::isRegularFile).sorted().toList()) {
        out.putNextEntry(new JarEntry(classes.relativize(p).toString()));
        out.write(Files.readAllBytes(p));
        out.closeEntry();
      }
      out.putNextEntry(new JarEntry("META-INF/services/dev.polystack.plugin.api.Plugin"));
      out.write("example.EvilPlugin\n".getBytes(StandardCharsets.UTF_8));
      out.closeEntry();
    }
    return jar;
  }
}
