package dev.polystack.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Files a hostile target chooses, met by the real command run as root (issue 20, "Root safety"
 * in docs/reliability.md): a deleted library whose path became a symlink to a FIFO, a stripped
 * library whose debug link is a symlink to a root-only ELF, and an executable too big for the
 * heap.
 */
class TargetFilesTest {
  private static final String BUILD_ID = "0123456789abcdef0123456789abcdef01234567";
  /** Sources in host/src/test/resources/native, see source(). */
  private static final String LIB = "dlopen_victim.c";
  private static final String MAIN = "dlopen_main.c";
  private static final String BLOCKER = """
      #include <stdio.h>
      #include <unistd.h>
      __attribute__((noinline)) int blocker(void) { char c; return (int) read(0, &c, 1); }
      int main(void) { printf("ready\\n"); fflush(stdout); return blocker() == 1 ? 0 : 1; }
      """;
  /** The capabilities map_files needs; without them every module takes the path fallback. */
  private static final String DROP_MAP_FILES = "--bounding-set=-sys_admin,-checkpoint_restore";

  @TempDir Path dir;

  /**
   * The case, with polystack holding the documented capabilities (no CAP_SYS_ADMIN, so
   * no map_files): the target's library is deleted and its path made a symlink to a FIFO that a
   * writer waits on. polystack must not open it (the writer stays blocked) and says in one
   * warning why the library's frames are unnamed; with full root, map_files still reaches the
   * deleted library and names its exported function.
   */
  @Test
  void aDeletedLibraryWhosePathIsNowAFifoIsNotOpened() throws Exception {
    Path app = appDir();
    Path lib = compile(app.resolve("libvictim.so"), source(LIB), "-shared", "-fPIC");
    try (Target target = Target.start(compile(dir.resolve("main"), source(MAIN), "-ldl"),
        lib.toString())) {
      target.awaitOutput("ready", 20_000);
      Files.delete(lib);
      Path fifo = dir.resolve("fifo");
      Process writer = blockedWriter(fifo);
      try {
        Files.createSymbolicLink(lib, fifo);

        Tools.Output capped = dump(target, List.of("setpriv", DROP_MAP_FILES));
        assertEquals(0, capped.exitCode(), capped.stderr());
        writer.waitFor(300, TimeUnit.MILLISECONDS);
        assertTrue(writer.isAlive() && inOpen(writer), "polystack opened the FIFO");
        assertTrue(capped.stderr().contains(lib + " was deleted"), capped.stderr());
        assertFalse(capped.stdout().contains("victim_entry"), capped.stdout());

        Tools.Output root = dump(target, List.of());
        assertEquals(0, root.exitCode(), root.stderr());
        assertTrue(root.stdout().contains("victim_entry"), root.stdout());
        RecordAttachTest.assertReleasedAndRunning(target);
        // Control: opening the FIFO for reading does wake the writer.
        assertEquals("woken", Files.readString(fifo).trim());
        assertTrue(writer.waitFor(20, TimeUnit.SECONDS));
      } finally {
        writer.destroy();
      }
      target.stdin().write('x');
      target.stdin().close();
      assertEquals(0, target.awaitExit(20), target.output());
    }
  }

  /**
   * A stripped library whose .gnu_debuglink file is a symlink to a root-only ELF built from the
   * same code with other names and the same build id: its names must not label the frames. The
   * genuine debug file (same place, a regular file with the matching CRC32) does.
   */
  @Test
  void aDebugLinkSymlinkedToARootOnlyElfDoesNotNameFrames() throws Exception {
    Path app = appDir();
    Path full = compile(app.resolve("full.so"), source(LIB), "-shared", "-fPIC",
        "-Wl,--build-id=0x" + BUILD_ID);
    Path debug = app.resolve("libvictim.debug");
    run(List.of("objcopy", "--only-keep-debug", full.toString(), debug.toString()));
    Path lib = app.resolve("libvictim.so");
    run(List.of("objcopy", "--strip-all", "--add-gnu-debuglink=" + debug, full.toString(),
        lib.toString()));
    Path genuine = dir.resolve("genuine.debug");
    Files.move(debug, genuine);
    Path secretDir = Files.createDirectories(dir.resolve("root-only"));
    Files.setPosixFilePermissions(secretDir, PosixFilePermissions.fromString("rwx------"));
    Path secret = compile(secretDir.resolve("secret.so"), source(LIB), "-shared", "-fPIC",
        "-Dvictim_wait=root_only_secret_fn", "-Wl,--build-id=0x" + BUILD_ID);
    Files.setPosixFilePermissions(secret, PosixFilePermissions.fromString("rw-------"));
    Files.createSymbolicLink(debug, secret);

    try (Target target = Target.start(compile(dir.resolve("main"), source(MAIN), "-ldl"),
        lib.toString())) {
      target.awaitOutput("ready", 20_000);
      awaitSleeping(target);

      Tools.Output attacked = dump(target, List.of());
      assertEquals(0, attacked.exitCode(), attacked.stderr());
      assertFalse(attacked.stdout().contains("root_only_secret_fn"), attacked.stdout());
      assertTrue(attacked.stdout().contains("victim_entry"), attacked.stdout());

      Files.delete(debug);
      Files.copy(genuine, debug, StandardCopyOption.REPLACE_EXISTING);
      Tools.Output genuineRun = dump(target, List.of());
      assertEquals(0, genuineRun.exitCode(), genuineRun.stderr());
      assertTrue(genuineRun.stdout().contains("victim_wait"), genuineRun.stdout());

      RecordAttachTest.assertReleasedAndRunning(target);
      target.stdin().write('x');
      target.stdin().close();
      assertEquals(0, target.awaitExit(20), target.output());
    }
  }

  /**
   * Reaching the heap limit is one line, exit 1, and the target is released. The launcher's
   * options with a small -Xmx (a later -Xmx wins, as with POLYSTACK_JAVA_OPTS) and a target
   * whose executable has 1,000,000 symbols: naming its frames needs more heap than that.
   */
  @Test
  void reachingTheHeapLimitIsOneLineAndReleasesTheTarget() throws Exception {
    StringBuilder symbols = new StringBuilder(
        ".section .note.GNU-stack,\"\",@progbits\n.text\nanchor: ret\n");
    for (int i = 0; i < 1_000_000; i++) {
      symbols.append(String.format("f%07d = anchor%n", i));
    }
    Path asm = dir.resolve("symbols.s");
    Files.writeString(asm, symbols, StandardCharsets.US_ASCII);
    Path big = compile(dir.resolve("big"), BLOCKER, asm.toString());
    try (Target target = Target.start(big)) {
      target.awaitOutput("ready", 20_000);
      awaitSleeping(target);
      List<String> jvm = new ArrayList<>(Distribution.launcherJvmOptions());
      jvm.add("-Xmx64m");

      Tools.Output out = dump(target, List.of(), jvm);

      assertEquals(1, out.exitCode(), out.stderr());
      List<String> lines = out.stderr().lines().filter(l -> !l.isBlank()).toList();
      assertEquals(1, lines.size(), out.stderr());
      assertTrue(lines.get(0).startsWith("polystack: out of memory: the Java heap limit of "),
          lines.get(0));
      assertTrue(lines.get(0).contains("POLYSTACK_JAVA_OPTS=-Xmx"), lines.get(0));
      // What was held: here, the executable's million symbols.
      assertTrue(lines.get(0).contains(" MiB was reached while reading the target's binaries"),
          lines.get(0));
      RecordAttachTest.assertReleasedAndRunning(target);
      target.stdin().write('x');
      target.stdin().close();
      assertEquals(0, target.awaitExit(20), target.output());
    }
  }

  private Path appDir() throws IOException {
    Path app = Files.createDirectories(dir.resolve("app"));
    Files.setPosixFilePermissions(app, PosixFilePermissions.fromString("rwxr-xr-x"));
    return app;
  }

  private static Tools.Output dump(Target target, List<String> prefix) throws Exception {
    return dump(target, prefix, List.of());
  }

  /** {@code dump --pid} of the target, after {@code prefix} and with JVM options. */
  private static Tools.Output dump(Target target, List<String> prefix, List<String> jvm)
      throws Exception {
    List<String> command = new ArrayList<>(prefix);
    command.add(java());
    command.addAll(jvm);
    command.addAll(List.of("-jar", Distribution.jar().toString(), "dump", "--pid",
        Integer.toString(target.pid())));
    return Tools.run(180, null, command);
  }

  private static String java() {
    return Path.of(System.getProperty("java.home"), "bin", "java").toString();
  }

  /**
   * A C source of host/src/test/resources/native: dlopen_victim.c (a library blocking in
   * victim_wait) and dlopen_main.c (which loads it), shared by DebugFileSymbolsTest and
   * TargetFilesTest.
   */
  private static String source(String name) throws Exception {
    return Files.readString(
        Path.of(TargetFilesTest.class.getResource("/native/" + name).toURI()));
  }

  private static Path compile(Path out, String source, String... flags) throws Exception {
    Path src = out.resolveSibling(out.getFileName() + ".c");
    Files.writeString(src, source, StandardCharsets.UTF_8);
    List<String> cmd = new ArrayList<>(List.of("gcc", "-O1", "-g", "-o", out.toString(),
        src.toString()));
    cmd.addAll(List.of(flags));
    run(cmd);
    return out;
  }

  private static void run(List<String> cmd) throws Exception {
    Tools.Output out = Tools.run(120, null, cmd);
    if (out.exitCode() != 0) {
      throw new AssertionError(String.join(" ", cmd) + " failed: " + out.stderr());
    }
  }

  /** A process blocked opening {@code fifo} (created here) for writing. */
  private static Process blockedWriter(Path fifo) throws Exception {
    run(List.of("mkfifo", fifo.toString()));
    Process p = new ProcessBuilder("sh", "-c", "echo woken > \"$1\"", "sh", fifo.toString())
        .redirectErrorStream(true).start();
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
    while (!inOpen(p)) {
      if (!p.isAlive() || System.nanoTime() > deadline) {
        p.destroy();
        throw new AssertionError("the FIFO writer never blocked in open");
      }
      Thread.sleep(5);
    }
    return p;
  }

  /** The process sits in openat(2) (/proc/PID/syscall starts with its number, 257). */
  private static boolean inOpen(Process p) {
    try {
      return Files.readString(Path.of("/proc/" + p.pid() + "/syscall")).startsWith("257 ");
    } catch (IOException e) {
      return false;
    }
  }

  private static void awaitSleeping(Target target) throws Exception {
    long deadline = System.nanoTime() + 10_000_000_000L;
    while (!target.status().state().startsWith("S")) {
      assertFalse(System.nanoTime() > deadline, "never blocked: " + target.status());
      Thread.sleep(20);
    }
  }
}
