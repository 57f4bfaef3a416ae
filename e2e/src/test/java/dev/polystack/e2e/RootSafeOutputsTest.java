package dev.polystack.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Issue 20's output rows through the real commands, run as root as polystack is: a symbolic
 * link planted at the output name (standing for a link to a file only root may write) is
 * refused by every command that writes, before the target is touched; what is written is
 * mode 0600 and, under sudo, the invoking user's; nothing is left behind by a failed run. The
 * rules: docs/operations.md, "Output files".
 */
class RootSafeOutputsTest {
  private static final Map<String, String> SUDO = Map.of("SUDO_UID", "4242", "SUDO_GID", "4343",
      "SUDO_USER", "nobody-here");

  @TempDir Path dir;

  private Path secret() throws IOException {
    Path secret = Files.writeString(dir.resolve("secret"), "root's secret\n");
    Files.setPosixFilePermissions(secret, PosixFilePermissions.fromString("rw-------"));
    return secret;
  }

  @ParameterizedTest(name = "{0}")
  @CsvSource(delimiter = '|', value = {
    "record --pid {pid} -o {link}|--output",
    "record --pid {pid} -o {dir}/p.folded --stats-json {link}|--stats-json",
    "snapshot --pid {pid} -o {link}|--output",
    "snapshot --pid {pid} -o {dir}/s.psnap --module-store {link}|--module-store",
    "vdso --pid {pid} -o {link}|--output",
    "vdso --pid {pid} --append -o {link}|--output",
  })
  void noCommandWritesThroughASymlinkAndTheTargetIsNotTouched(String args, String option)
      throws Exception {
    Path secret = secret();
    Path link = Files.createSymbolicLink(dir.resolve("out.html"), secret);
    try (Target target = Target.start(Workloads.binary("block_read"))) {
      target.awaitOutput("ready", 10_000);
      List<String> argv = new ArrayList<>();
      for (String a : args.split(" ")) {
        argv.add(a.replace("{pid}", Integer.toString(target.pid()))
            .replace("{link}", link.toString()).replace("{dir}", dir.toString()));
      }

      var result = Distribution.run(argv.toArray(String[]::new));

      assertEquals(2, result.exitCode(), result.stderr());
      assertEquals(1, result.stderrLines().size(), result.stderr());
      assertTrue(result.stderrLines().get(0).startsWith("polystack: " + option + " " + link
          + ": is a symbolic link"), result.stderr());
      assertEquals("root's secret\n", Files.readString(secret));
      assertEquals(List.of("out.html", "secret"), names(dir), "nothing else written");
      RecordAttachTest.assertReleasedAndRunning(target);
    }
  }

  @Test
  void underSudoARecordTakesItsFormatFromTheNameAndBelongsToTheInvokingUser() throws Exception {
    // Attached, not launched: what user a launched command runs as is another rule.
    try (Target target = Target.start(Workloads.binary("two_threads"), "stdin")) {
      var result = Distribution.run(dir, SUDO, "record", "--pid", Integer.toString(target.pid()),
          "--mode", "ptrace", "--duration", "1s", "-o", "p.folded", "--stats-json", "stats.json");
      assertEquals(0, result.exitCode(), result.stderr());
      RecordAttachTest.assertReleasedAndRunning(target);
    }
    Path folded = dir.resolve("p.folded");
    // Folded stacks, not HTML: every line is "frame;frame COUNT".
    Map<String, Long> stacks = Tools.folded(folded);
    assertTrue(Tools.total(stacks) > 0, Files.readString(folded));
    assertFalse(Files.readString(folded).contains("<html"), "HTML in a .folded file");
    for (Path p : List.of(folded, dir.resolve("stats.json"))) {
      assertPrivateTo(p, 4242, 4343, 0600);
    }
    assertEquals(List.of("p.folded", "stats.json"), names(dir), "no hidden file left");
  }

  @Test
  void aSnapshotAndItsModuleStoreArePrivate() throws Exception {
    Path snapshot = dir.resolve("s.psnap");
    Path store = dir.resolve("store");
    try (Target target = Target.start(Workloads.binary("block_read"))) {
      target.awaitOutput("ready", 10_000);
      var result = Distribution.run(dir, SUDO, "snapshot", "--pid",
          Integer.toString(target.pid()), "-o", snapshot.toString(), "--module-store",
          store.toString());
      assertEquals(0, result.exitCode(), result.stderr());
      RecordAttachTest.assertReleasedAndRunning(target);
    }
    assertPrivateTo(snapshot, 4242, 4343, 0600);
    assertPrivateTo(store, 4242, 4343, 0700);
    List<String> modules = names(store);
    assertFalse(modules.isEmpty(), "no module stored");
    for (String m : modules) {
      assertTrue(m.matches("[0-9a-f]{64}\\.gz"), m);
      assertPrivateTo(store.resolve(m), 4242, 4343, 0600);
    }
  }

  @Test
  void aFormatTheNameContradictsOrAnotherToolsFormatIsBadUsage() throws Exception {
    var contradicts = Distribution.run("record", "--format", "folded", "-o",
        dir.resolve("p.html").toString(), "--", "/usr/bin/touch", dir.resolve("ran").toString());
    assertEquals(2, contradicts.exitCode(), contradicts.stderr());
    assertEquals(List.of("polystack: --format folded contradicts --output " + dir.resolve("p.html")
        + ", whose name says html; drop --format or end the name with .folded, .collapsed or"
        + " .txt"), contradicts.stderrLines());

    var jfr = Distribution.run("record", "-o", dir.resolve("app.jfr").toString(), "--",
        "/usr/bin/touch", dir.resolve("ran").toString());
    assertEquals(2, jfr.exitCode(), jfr.stderr());
    assertEquals(1, jfr.stderrLines().size(), jfr.stderr());
    assertTrue(jfr.stderrLines().get(0).startsWith("polystack: --output " + dir.resolve("app.jfr")
        + ": a .jfr file is JFR (async-profiler's and the JDK's recording format), not a format"
        + " polystack writes; polystack writes html (.html, .htm), "), jfr.stderr());
    assertEquals(List.of(), names(dir), "the command ran or a file was written");
  }

  private static void assertPrivateTo(Path p, int uid, int gid, int mode) throws IOException {
    Map<String, Object> a = Files.readAttributes(p, "unix:uid,gid,mode",
        LinkOption.NOFOLLOW_LINKS);
    assertEquals(uid, a.get("uid"), p + " owner");
    assertEquals(gid, a.get("gid"), p + " group");
    assertEquals(Integer.toOctalString(mode),
        Integer.toOctalString((Integer) a.get("mode") & 07777), p + " mode");
  }

  static List<String> names(Path dir) throws IOException {
    try (Stream<Path> files = Files.list(dir)) {
      return files.map(p -> p.getFileName().toString()).sorted().toList();
    }
  }
}
