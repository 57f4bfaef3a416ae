package dev.polystack.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.FileTime;
import java.nio.file.attribute.GroupPrincipal;
import java.nio.file.attribute.PosixFileAttributeView;
import java.nio.file.attribute.PosixFilePermissions;
import java.nio.file.attribute.UserPrincipalLookupService;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The {@code ./polystack} launcher script run by root (as under sudo) in a tree another user
 * owns, here nobody: with a stale build it must not run Maven as root in that tree, only say in
 * one line how to build it; with a current build it runs. And POLYSTACK_JAVA_OPTS is split into
 * options but never glob-expanded. Each test copies the script (and, where it must run, the
 * built jar) into a tree of its own. Run as root (CI).
 */
class LauncherScriptTest {
  @TempDir Path dir;

  @Test
  void rootDoesNotBuildATreeAnotherUserOwns() throws Exception {
    Path tree = tree("stale");
    Files.writeString(tree.resolve("pom.xml"), "<project/>\n"); // a source, and no build yet
    chownToNobody(tree);

    Output out = launch(tree, dir, Map.of(), "--version");

    assertEquals(1, out.exitCode(), out.stderr());
    assertEquals(List.of("polystack: not building " + tree + " as root: the tree belongs to"
        + " nobody; build it as nobody first (cd " + tree + " && mvn -q -DskipTests package),"
        + " then run polystack again"), out.stderr().lines().toList());
    assertFalse(Files.exists(tree.resolve("host/target")),
        "nothing may be created in the user's tree (no lock, no build output)");
  }

  @Test
  void rootRunsATreeAnotherUserBuiltAndNeverGlobsJavaOptions() throws Exception {
    Path tree = built("built");
    chownToNobody(tree);
    Path cwd = Files.createDirectory(dir.resolve("cwd"));
    // A file an unquoted expansion of -Dpolystack.probe=* would turn the option into.
    Files.writeString(cwd.resolve("-Dpolystack.probe=globbed"), "");

    Output out = launch(tree, cwd, Map.of("POLYSTACK_JAVA_OPTS",
        "-XshowSettings:properties  -Dpolystack.probe=*\t-Dpolystack.other=2"), "--version");

    assertEquals(0, out.exitCode(), out.stderr());
    assertTrue(out.stdout().contains("polystack"), out.stdout());
    String settings = out.stdout() + out.stderr();
    assertTrue(settings.contains("polystack.probe = *\n"), "not the literal *: " + settings);
    assertTrue(settings.contains("polystack.other = 2\n"), "options split on blanks: "
        + settings);
  }

  @Test
  void theOwnerGetsAClassDataArchiveUsedOnlyWhileNoOneElseCanWriteIt() throws Exception {
    Path tree = built("cds");
    Path jsa = tree.resolve("host/target/polystack.jsa");

    Output first = launch(tree, dir, Map.of(), "--version");

    assertEquals(0, first.exitCode(), first.stderr());
    assertEquals("", first.stderr(), "the training record says nothing");
    assertTrue(Files.isRegularFile(jsa), "made on the first run of a build without one");
    assertEquals("r--r--r--", PosixFilePermissions.toString(Files.getPosixFilePermissions(jsa)));
    try (Stream<Path> left = Files.list(jsa.getParent())) {
      assertEquals(List.of(), left.map(p -> p.getFileName().toString())
          .filter(n -> n.startsWith(".cds-training") || n.contains(".jsa.tmp")).toList(),
          "no training directory or temporary archive left");
    }
    // Root runs a tree another user built: their archive is as trusted as their jar.
    chownToNobody(tree);
    Map<String, String> classLog = Map.of("POLYSTACK_JAVA_OPTS", "-Xlog:class+load=info");
    Output used = launch(tree, dir, classLog, "--version");
    assertEquals(0, used.exitCode(), used.stderr());
    assertTrue(used.stdout().contains("source: shared objects file (top)"),
        "classes come from the archive");

    Files.setPosixFilePermissions(jsa, PosixFilePermissions.fromString("rw-rw-r--"));
    Output refused = launch(tree, dir, classLog, "--version");
    assertEquals(0, refused.exitCode(), refused.stderr());
    assertFalse(refused.stdout().contains("shared objects file (top)"),
        "an archive others could have written is not used");
    assertEquals("rw-rw-r--", PosixFilePermissions.toString(Files.getPosixFilePermissions(jsa)),
        "nor replaced by root in a tree root does not own");
  }

  /**
   * A group-writable {@code host/target} lets its group replace a jar that root then runs; a
   * jar another user owns, or one others may write, is the same. The launcher refuses in one
   * line and starts no JVM.
   */
  @Test
  void rootRefusesJarsSomeoneOtherThanTheOwnerCanChange() throws Exception {
    Path tree = built("shared");
    chownToNobody(tree);
    Path target = tree.resolve("host/target");
    Path libJar;
    try (Stream<Path> jars = Files.list(target.resolve("lib"))) {
      libJar = jars.sorted().findFirst().orElseThrow();
    }

    Files.setPosixFilePermissions(target, PosixFilePermissions.fromString("rwxrwxr-x"));
    Output groupDir = launch(tree, dir, Map.of(), "--version");
    assertEquals(1, groupDir.exitCode(), groupDir.stderr());
    assertEquals(List.of("polystack: not running the jars of " + tree + ": " + target
        + " can be changed by someone other than nobody or root (nobody, mode 775); make it"
        + " theirs and not writable by group or others (chmod go-w), or rebuild in a private"
        + " tree"), groupDir.stderr().lines().toList());
    assertEquals("", groupDir.stdout(), "no JVM ran");
    Files.setPosixFilePermissions(target, PosixFilePermissions.fromString("rwxr-xr-x"));

    Files.setPosixFilePermissions(libJar, PosixFilePermissions.fromString("rw-r--rw-"));
    Output otherJar = launch(tree, dir, Map.of(), "--version");
    assertEquals(1, otherJar.exitCode(), otherJar.stderr());
    assertTrue(otherJar.stderr().startsWith("polystack: not running the jars of " + tree + ": "
        + libJar + " can be changed"), otherJar.stderr());
    Files.setPosixFilePermissions(libJar, PosixFilePermissions.fromString("rw-r--r--"));

    Files.setOwner(tree.resolve("host/target/polystack-host.jar"), tree.getFileSystem()
        .getUserPrincipalLookupService().lookupPrincipalByName("daemon"));
    Output strangerJar = launch(tree, dir, Map.of(), "--version");
    assertEquals(1, strangerJar.exitCode(), strangerJar.stderr());
    assertTrue(strangerJar.stderr().contains("polystack-host.jar can be changed by someone other"
        + " than nobody or root (daemon, mode"), strangerJar.stderr());

    chownToNobody(tree);
    Output fine = launch(tree, dir, Map.of(), "--version");
    assertEquals(0, fine.exitCode(), fine.stderr());
  }

  /** A directory holding a copy of the launcher script, as a checkout would. */
  private Path tree(String name) throws IOException {
    Path tree = Files.createDirectory(dir.resolve(name));
    Files.copy(Distribution.root().resolve("polystack"), tree.resolve("polystack"),
        StandardCopyOption.COPY_ATTRIBUTES);
    return tree;
  }

  /** A tree with the built jar, its lib/, and a build stamp newer than everything in it. */
  private Path built(String name) throws IOException {
    Path tree = tree(name);
    Path target = Files.createDirectories(tree.resolve("host/target"));
    Files.copy(Distribution.jar(), target.resolve("polystack-host.jar"));
    Path lib = Files.createDirectory(target.resolve("lib"));
    try (Stream<Path> jars = Files.list(Distribution.jar().resolveSibling("lib"))) {
      for (Path jar : jars.toList()) {
        Files.copy(jar, lib.resolve(jar.getFileName()));
      }
    }
    Path stamp = Files.writeString(target.resolve(".polystack-build.stamp"), "");
    Files.setLastModifiedTime(stamp, FileTime.from(Instant.now().plusSeconds(60)));
    return tree;
  }

  private static void chownToNobody(Path tree) throws IOException {
    UserPrincipalLookupService users = tree.getFileSystem().getUserPrincipalLookupService();
    var nobody = users.lookupPrincipalByName("nobody");
    GroupPrincipal nogroup = users.lookupPrincipalByGroupName("nogroup");
    try (Stream<Path> all = Files.walk(tree)) {
      for (Path p : all.toList()) {
        PosixFileAttributeView view = Files.getFileAttributeView(p,
            PosixFileAttributeView.class);
        view.setOwner(nobody);
        view.setGroup(nogroup);
      }
    }
  }

  record Output(int exitCode, String stdout, String stderr) {}

  /** Runs {@code tree/polystack ARGS} with bash, java first on PATH, from {@code cwd}. */
  private static Output launch(Path tree, Path cwd, Map<String, String> env, String... args)
      throws Exception {
    Path out = Files.createTempFile("launcher-out", ".txt");
    Path err = Files.createTempFile("launcher-err", ".txt");
    try {
      ProcessBuilder b = new ProcessBuilder(Stream.concat(
          Stream.of("bash", tree.resolve("polystack").toString()), Stream.of(args)).toList());
      Map<String, String> e = Distribution.withoutSudo(b.environment());
      e.remove("POLYSTACK_JAVA_OPTS");
      e.put("PATH", Path.of(System.getProperty("java.home"), "bin") + ":"
          + e.getOrDefault("PATH", "/usr/bin:/bin"));
      e.putAll(env);
      Process p = b.directory(cwd.toFile()).redirectOutput(out.toFile())
          .redirectError(err.toFile()).redirectInput(Path.of("/dev/null").toFile()).start();
      if (!p.waitFor(120, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        throw new AssertionError("the launcher did not finish in 120 s");
      }
      return new Output(p.exitValue(), Files.readString(out, StandardCharsets.UTF_8),
          Files.readString(err, StandardCharsets.UTF_8));
    } finally {
      Files.deleteIfExists(out);
      Files.deleteIfExists(err);
    }
  }
}
