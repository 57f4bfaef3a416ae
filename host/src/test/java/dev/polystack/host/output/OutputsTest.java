package dev.polystack.host.output;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.polystack.host.sys.Credentials;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The attacks of issue 20's "outputs follow symlinks" and "secrets in world-readable files"
 * rows, run for real in a temporary directory: a symbolic link or hard link planted at the
 * output name before or during the run, a FIFO, an unwritable place, and the modes and owners
 * of what is written. Run as root, as polystack is, each attack would have reached a file the
 * attacker cannot write; the "secret" files stand for those.
 */
class OutputsTest {
  @TempDir Path dir;

  private final Credentials me = Credentials.ofThisProcess();
  private final Outputs outputs = new Outputs(me, Optional.empty());

  private Path secret() throws IOException {
    Path secret = dir.resolve("secret");
    Files.writeString(secret, "root's secret\n");
    Files.setPosixFilePermissions(secret, PosixFilePermissions.fromString("rw-------"));
    return secret;
  }

  private static void write(OutputFile file, String text) throws IOException {
    file.stream().write(text.getBytes(StandardCharsets.UTF_8));
  }

  @Test
  void aSymlinkAtTheNameIsRefusedAndItsTargetUntouched() throws Exception {
    Path secret = secret();
    Path link = Files.createSymbolicLink(dir.resolve("profile.html"), secret);

    OutputException e = assertThrows(OutputException.class,
        () -> outputs.replaceAtEnd(link, "--output"));

    assertTrue(e.usage());
    assertEquals("--output " + link + ": is a symbolic link; polystack never writes through one"
        + " (as root that could overwrite any file): remove the link or give the path it points"
        + " to", e.getMessage());
    assertEquals("root's secret\n", Files.readString(secret));
    assertEquals(List.of("profile.html", "secret"), names());
  }

  @Test
  void aSymlinkPlantedDuringTheRunIsReplacedNotWrittenThrough() throws Exception {
    Path secret = secret();
    Path out = dir.resolve("profile.html");
    try (OutputFile file = outputs.replaceAtEnd(out, "--output")) {
      // The attacker's move between the check at the start and the end of the recording.
      Files.createSymbolicLink(out, secret);
      write(file, "<html>profile</html>");
      assertEquals(out, file.commit());
    }
    assertEquals("root's secret\n", Files.readString(secret));
    assertFalse(Files.isSymbolicLink(out));
    assertEquals("<html>profile</html>", Files.readString(out));
    assertEquals(List.of("profile.html", "secret"), names(), "no hidden file left behind");
  }

  @Test
  void aHardLinkAtTheNameIsReplacedByANewFileNotRewritten() throws Exception {
    Path secret = secret();
    Path out = Files.createLink(dir.resolve("profile.folded"), secret);
    try (OutputFile file = outputs.replaceAtEnd(out, "--output")) {
      write(file, "main;work 3\n");
      file.commit();
    }
    assertEquals("root's secret\n", Files.readString(secret));
    assertEquals("main;work 3\n", Files.readString(out));
    assertNotEquals(Files.getAttribute(secret, "unix:ino"), Files.getAttribute(out, "unix:ino"));
  }

  @Test
  void anExistingFileIsReplacedWithMode0600WhateverTheUmaskAllowed() throws Exception {
    Path out = Files.writeString(dir.resolve("p.html"), "old");
    Files.setPosixFilePermissions(out, PosixFilePermissions.fromString("rw-rw-rw-"));
    try (OutputFile file = outputs.replaceAtEnd(out, "--output")) {
      // Until the commit the old file is still there, whole.
      assertEquals("old", Files.readString(out));
      write(file, "new");
      file.commit();
    }
    assertEquals("new", Files.readString(out));
    assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(out)));
  }

  @Test
  void anUncommittedFileLeavesNothingBehind() throws Exception {
    Path out = dir.resolve("p.html");
    try (OutputFile file = outputs.replaceAtEnd(out, "--output")) {
      write(file, "half a profile");
      assertEquals(1, names().size(), "the hidden file exists while recording");
    }
    assertEquals(List.of(), names());
  }

  @Test
  void aDefaultNameIsChosenAtTheEnd() throws Exception {
    try (OutputFile file = outputs.replaceAtEndIn(dir, "--output")) {
      write(file, "x");
      assertEquals(dir.resolve("luajit-42.html"), file.commit("luajit-42.html"));
    }
    assertEquals(List.of("luajit-42.html"), names());
  }

  @Test
  void aFifoOrADirectoryAtTheNameIsRefusedWithoutOpeningIt() throws Exception {
    Path fifo = dir.resolve("p.html");
    Process mkfifo = new ProcessBuilder("mkfifo", fifo.toString()).start();
    assertTrue(mkfifo.waitFor(10, TimeUnit.SECONDS) && mkfifo.exitValue() == 0);
    OutputException e = assertThrows(OutputException.class,
        () -> outputs.writeNow(fifo, "--output", false));
    assertTrue(e.usage());
    assertTrue(e.getMessage().endsWith(": not a regular file (a device, FIFO or socket); give"
        + " the name of a file to write"), e.getMessage());

    e = assertThrows(OutputException.class, () -> outputs.replaceAtEnd(dir, "--output"));
    assertEquals("--output " + dir + ": is a directory; give a file name", e.getMessage());
  }

  @Test
  void anUnwritablePlaceFailsAtOnceWithTheSystemsReason() {
    OutputException e = assertThrows(OutputException.class,
        () -> outputs.replaceAtEnd(Path.of("/proc/p.html"), "--output"));
    assertFalse(e.usage());
    // procfs answers O_CREAT with ENOENT, which alone would read as a missing directory.
    assertEquals("cannot write /proc/p.html: No such file or directory (its file system does"
        + " not create files there); choose another --output", e.getMessage());

    e = assertThrows(OutputException.class,
        () -> outputs.replaceAtEnd(dir.resolve("missing/p.html"), "--output"));
    assertTrue(e.usage());
    assertEquals("--output " + dir.resolve("missing/p.html") + ": directory "
        + dir.resolve("missing") + " does not exist", e.getMessage());
  }

  @Test
  void streamedOutputUnlinksAPlantedHardLinkAndRefusesAppendingThroughOne() throws Exception {
    Path secret = secret();
    Path out = Files.createLink(dir.resolve("calls.jsonl"), secret);

    OutputException e = assertThrows(OutputException.class,
        () -> outputs.writeNow(out, "--output", true));
    assertEquals("--output " + out + ": has 2 hard links; polystack appends only to a file with"
        + " no other name (another could be someone else's file): give a new file or drop"
        + " --append", e.getMessage());

    try (OutputFile file = outputs.writeNow(out, "--output", false)) {
      write(file, "{\"type\":\"call\"}\n");
      file.commit();
    }
    assertEquals("root's secret\n", Files.readString(secret));
    assertEquals("{\"type\":\"call\"}\n", Files.readString(out));

    try (OutputFile file = outputs.writeNow(out, "--output", true)) {
      write(file, "{\"type\":\"summary\"}\n");
    }
    assertEquals("{\"type\":\"call\"}\n{\"type\":\"summary\"}\n", Files.readString(out));
  }

  @Test
  void appendingToAFileAnotherUserPlantedIsRefused() throws Exception {
    assumeTrue(me.root(), "chown needs root");
    Path planted = Files.writeString(dir.resolve("calls.jsonl"), "");
    Files.setPosixFilePermissions(planted, PosixFilePermissions.fromString("rw-rw-rw-"));
    Files.setAttribute(planted, "unix:uid", 4242);

    OutputException e = assertThrows(OutputException.class,
        () -> outputs.writeNow(planted, "--output", true));

    assertEquals("--output " + planted + ": owned by uid 4242; polystack appends only to a file"
        + " of the user it writes for (another user could read what is appended): give a new"
        + " file or drop --append", e.getMessage());
    assertEquals(0, Files.size(planted));
  }

  @Test
  void aStreamedFileThatGotNothingIsRemoved() throws Exception {
    Path out = dir.resolve("calls.jsonl");
    outputs.writeNow(out, "--output", false).close();
    assertFalse(Files.exists(out));
  }

  @Test
  void underSudoFilesAndDirectoriesBelongToTheInvokingUser() throws Exception {
    assumeTrue(me.root(), "chown needs root");
    FileOwner caller = FileOwner.sudoCaller(me, Map.of("SUDO_UID", "4242", "SUDO_GID", "4343"))
        .orElseThrow();
    Outputs sudo = new Outputs(me, Optional.of(caller));
    Path out = dir.resolve("p.pb.gz");
    try (OutputFile file = sudo.replaceAtEnd(out, "--output")) {
      write(file, "x");
      file.commit();
    }
    Path store = sudo.directory(dir.resolve("modules"), "--module-store");
    Path scratch = sudo.privateTemporaryDirectory("polystack-test-");
    try {
      for (Path p : List.of(out, store, scratch)) {
        Map<String, Object> a = Files.readAttributes(p, "unix:uid,gid,mode",
            LinkOption.NOFOLLOW_LINKS);
        assertEquals(4242, a.get("uid"), p.toString());
        assertEquals(4343, a.get("gid"), p.toString());
        assertEquals(Files.isDirectory(p) ? 0700 : 0600, (Integer) a.get("mode") & 0777,
            p.toString());
      }
      // The caller's directory is accepted later; another user's is not.
      assertEquals(store, sudo.directory(store, "--module-store"));
      OutputException e = assertThrows(OutputException.class,
          () -> outputs.directory(store, "--module-store"));
      assertTrue(e.getMessage().contains("owned by uid 4242"), e.getMessage());
    } finally {
      Files.delete(scratch);
    }
  }

  @Test
  void theSudoCallerComesOnlyFromWellFormedIdsOfARootProcess() {
    Credentials root = new Credentials(0, -1L);
    assertEquals(Optional.of(new FileOwner(1000, 1000)),
        FileOwner.sudoCaller(root, Map.of("SUDO_UID", "1000", "SUDO_GID", "1000")));
    assertEquals(Optional.empty(), FileOwner.sudoCaller(new Credentials(1000, 0),
        Map.of("SUDO_UID", "1000", "SUDO_GID", "1000")));
    for (String bad : List.of("", "0", "-1", "1e3", "٣", "99999999999")) {
      assertEquals(Optional.empty(),
          FileOwner.sudoCaller(root, Map.of("SUDO_UID", bad, "SUDO_GID", "1000")), bad);
    }
  }

  @Test
  void aDirectoryGivenAsALinkIsRefused() throws Exception {
    Path real = Files.createDirectory(dir.resolve("real"));
    Path link = Files.createSymbolicLink(dir.resolve("polystack-demo"), real);
    OutputException e = assertThrows(OutputException.class,
        () -> outputs.directory(link, "--output-dir"));
    assertTrue(e.usage());
    assertTrue(e.getMessage().contains("is a symbolic link"), e.getMessage());

    Path created = outputs.directory(dir.resolve("a/b"), "--output-dir");
    assertEquals(0700, (Integer) Files.getAttribute(created, "unix:mode") & 0777);
  }

  private List<String> names() throws IOException {
    try (Stream<Path> files = Files.list(dir)) {
      return files.map(p -> p.getFileName().toString()).sorted().toList();
    }
  }
}
