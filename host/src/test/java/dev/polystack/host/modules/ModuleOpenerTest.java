package dev.polystack.host.modules;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.polystack.host.elf.ElfFile;
import dev.polystack.host.memory.ProcessMemory;
import dev.polystack.host.proc.DeviceNumber;
import dev.polystack.host.proc.MappedFile;
import dev.polystack.host.proc.MemoryMapping;
import dev.polystack.host.proc.Permissions;
import dev.polystack.host.proc.ProcFs;
import dev.polystack.host.testutil.BlockedWriter;
import dev.polystack.host.testutil.SystemLibraries;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The /proc/PID/root fallback of {@link ModuleOpener} against a chroot-like tree: a fake /proc
 * whose PID/root is a directory the test builds, with no map_files (as when map_files is not
 * readable), so every open goes through the target's root. The real ELF file used is the
 * system's libc, copied, so the files are parseable and their dev/inode are real.
 */
class ModuleOpenerTest {
  private static final int PID = 4242;

  @TempDir Path dir;

  private Path targetRoot() throws Exception {
    return Files.createDirectories(dir.resolve("proc").resolve(Integer.toString(PID))
        .resolve("root"));
  }

  @Test
  void cachesTakeAtMostAQuarterOfTheDescriptorLimitEach() {
    assertEquals(256, ModuleOpener.cachedFilesWithin(java.util.OptionalLong.of(1024)));
    assertEquals(ModuleOpener.MAX_CACHED_FILES,
        ModuleOpener.cachedFilesWithin(java.util.OptionalLong.of(1 << 20)));
    assertEquals(ModuleOpener.MAX_CACHED_FILES,
        ModuleOpener.cachedFilesWithin(java.util.OptionalLong.empty()));
    assertEquals(1, ModuleOpener.cachedFilesWithin(java.util.OptionalLong.of(3)));
  }

  /**
   * The kernel maps one vDSO image into every process, each at its own address: it is parsed
   * once, and each process's bias, taken from its own mapping, places its symbols in its own
   * mapping exactly as a parse of that process's image does.
   */
  @Test
  void theVdsoIsParsedOnceForEveryProcessThatMapsTheSameImage() throws Exception {
    Process a = new ProcessBuilder("sleep", "30").start();
    Process b = new ProcessBuilder("sleep", "30").start();
    try {
      ModuleOpener opener = new ModuleOpener(4);
      ElfFile first = null;
      for (Process p : List.of(a, b)) {
        int pid = (int) p.pid();
        MemoryMapping vdso = ProcFs.system().forPid(pid).maps()
            .first(dev.polystack.host.proc.MappingKind.VDSO).orElseThrow();
        ElfFile shared = opener.openVdso(vdso, ProcessMemory.of(pid));
        ElfFile own = ModuleOpener.vdso(vdso, ProcessMemory.of(pid));
        if (first == null) {
          first = shared;
        }
        assertSame(first, shared);
        long sharedAt = vdso.start() - shared.imageStartAddress()
            + shared.findDynamicSymbol("__vdso_clock_gettime").orElseThrow().value();
        long ownAt = own.loadBias()
            + own.findDynamicSymbol("__vdso_clock_gettime").orElseThrow().value();
        assertEquals(ownAt, sharedAt, "process " + pid);
        assertTrue(sharedAt >= vdso.start() && sharedAt < vdso.end(), "process " + pid);
      }
    } finally {
      a.destroy();
      b.destroy();
    }
  }

  private ModuleOpener opener() {
    return new ModuleOpener(dir.resolve("proc"));
  }

  /** A mapping of {@code path} (as the target names it) claiming {@code file}'s dev/inode. */
  private static MappedFile mappingOf(String path, Path file) throws Exception {
    return mappingOf(path, file, false);
  }

  private static MappedFile mappingOf(String path, Path file, boolean deleted)
      throws Exception {
    Map<String, Object> a = Files.readAttributes(file, "unix:dev,ino");
    long dev = (Long) a.get("dev");
    DeviceNumber device = new DeviceNumber(ModuleOpener.major(dev), ModuleOpener.minor(dev));
    long inode = (Long) a.get("ino");
    MemoryMapping m = new MemoryMapping(0x7f0000000000L, 0x7f0000001000L,
        new Permissions("r-xp", true, false, true, false), 0, device, inode, path, deleted);
    return new MappedFile(path, device, inode, deleted, List.of(m));
  }

  @Test
  void aFileInsideTheRootWithTheMappedIdentityOpens() throws Exception {
    Path lib = Files.createDirectories(targetRoot().resolve("lib")).resolve("libc.so.6");
    Files.copy(SystemLibraries.libc(), lib);
    ElfFile elf = opener().open(PID, mappingOf("/lib/libc.so.6", lib));
    assertTrue(elf.toString().contains("/lib/libc.so.6"), elf.toString());
  }

  /**
   * The target's root holds a symlink with an absolute target outside that root, and the mapping
   * claims the outside file's identity (the strongest case for an attacker: the dev/inode check
   * alone would pass). Resolved inside the target's root, "/outside/..." does not exist there.
   */
  @Test
  void anAbsoluteSymlinkOutOfTheRootIsNotFollowedOut() throws Exception {
    Path outside = Files.createDirectories(dir.resolve("outside")).resolve("secret.so");
    Files.copy(SystemLibraries.libc(), outside);
    Path lib = Files.createDirectories(targetRoot().resolve("lib"));
    Files.createSymbolicLink(lib.resolve("libevil.so"), outside.toAbsolutePath());
    ModuleOpenException e = assertThrows(ModuleOpenException.class,
        () -> opener().open(PID, mappingOf("/lib/libevil.so", outside)));
    assertEquals("unreadable", e.reason(), e.getMessage());
  }

  /** The same with ".." components: they stop at the target's root. */
  @Test
  void aRelativeSymlinkClimbingOutOfTheRootIsNotFollowedOut() throws Exception {
    Path outside = Files.createDirectories(dir.resolve("outside")).resolve("secret.so");
    Files.copy(SystemLibraries.libc(), outside);
    Path lib = Files.createDirectories(targetRoot().resolve("usr/lib"));
    Files.createSymbolicLink(lib.resolve("libevil.so"),
        Path.of("../../../../../outside/secret.so"));
    ModuleOpenException e = assertThrows(ModuleOpenException.class,
        () -> opener().open(PID, mappingOf("/usr/lib/libevil.so", outside)));
    assertEquals("unreadable", e.reason(), e.getMessage());
  }

  /** An absolute symlink is fine while it stays inside: it means the target's own "/". */
  @Test
  void anAbsoluteSymlinkIsResolvedInsideTheRoot() throws Exception {
    Path root = targetRoot();
    Path real = Files.createDirectories(root.resolve("opt/lib")).resolve("libc.so.6");
    Files.copy(SystemLibraries.libc(), real);
    Files.createDirectories(root.resolve("lib"));
    Files.createSymbolicLink(root.resolve("lib/libc.so.6"), Path.of("/opt/lib/libc.so.6"));
    ElfFile elf = opener().open(PID, mappingOf("/lib/libc.so.6", real));
    assertTrue(elf.toString().contains("/lib/libc.so.6"), elf.toString());
  }

  /** A different file at the mapped path (replaced on disk) is refused, never parsed. */
  @Test
  void aFileWithAnotherIdentityIsRefused() throws Exception {
    Path lib = Files.createDirectories(targetRoot().resolve("lib")).resolve("libc.so.6");
    Files.copy(SystemLibraries.libc(), lib);
    Path other = dir.resolve("other.so");
    Files.copy(SystemLibraries.libc(), other);
    ModuleOpenException e = assertThrows(ModuleOpenException.class,
        () -> opener().open(PID, mappingOf("/lib/libc.so.6", other)));
    assertEquals("replaced", e.reason(), e.getMessage());
  }

  /** A FIFO in the file's place neither blocks the open nor passes as the mapped file. */
  @Test
  void aFifoInTheFilesPlaceDoesNotBlock() throws Exception {
    Path lib = Files.createDirectories(targetRoot().resolve("lib")).resolve("libc.so.6");
    Process mkfifo = new ProcessBuilder("mkfifo", lib.toString()).inheritIO().start();
    assertEquals(0, mkfifo.waitFor());
    ModuleOpenException e = assertThrows(ModuleOpenException.class,
        () -> opener().open(PID, mappingOf("/lib/libc.so.6", lib)));
    assertEquals("replaced", e.reason(), e.getMessage());
    assertTrue(e.getMessage().contains("not a regular file"), e.getMessage());
  }

  /**
   * The open itself must have no effect on what sits at the path: a FIFO there with a writer
   * blocked in open(2) stays blocked (an open for reading, even O_NONBLOCK, would wake it).
   */
  @Test
  void aFifoInTheFilesPlaceIsNeverOpenedForReading() throws Exception {
    Path fifo = Files.createDirectories(targetRoot().resolve("lib")).resolve("libc.so.6");
    try (BlockedWriter writer = BlockedWriter.on(fifo)) {
      ModuleOpenException e = assertThrows(ModuleOpenException.class,
          () -> opener().open(PID, mappingOf("/lib/libc.so.6", fifo)));
      assertEquals("replaced", e.reason(), e.getMessage());
      assertTrue(writer.stillBlockedAfter(300), "polystack opened the FIFO");
      assertEquals("woken", writer.wakeBy(fifo)); // control: an open does wake it
    }
  }

  /** A device node in a library's place is refused from its O_PATH descriptor, never opened. */
  @Test
  void aDeviceNodeInTheFilesPlaceIsRefused() throws Exception {
    Path node = Files.createDirectories(targetRoot().resolve("lib")).resolve("libc.so.6");
    Process mknod = new ProcessBuilder("mknod", node.toString(), "c", "1", "3")
        .inheritIO().start();
    assertEquals(0, mknod.waitFor());
    ModuleOpenException e = assertThrows(ModuleOpenException.class,
        () -> opener().open(PID, mappingOf("/lib/libc.so.6", node)));
    assertEquals("replaced", e.reason(), e.getMessage());
    assertTrue(e.getMessage().contains("not a regular file"), e.getMessage());
  }

  /**
   * A deleted module is reached through map_files or not at all: its path now names whatever
   * the target put there. Here that is even a file with the mapped identity (the strongest
   * case), and still it is not opened.
   */
  @Test
  void aDeletedModuleNeverFallsBackToItsPath() throws Exception {
    Path lib = Files.createDirectories(targetRoot().resolve("lib")).resolve("libc.so.6");
    Files.copy(SystemLibraries.libc(), lib);
    ModuleOpenException e = assertThrows(ModuleOpenException.class,
        () -> opener().open(PID, mappingOf("/lib/libc.so.6", lib, true)));
    assertEquals("deleted", e.reason(), e.getMessage());
    assertTrue(e.getMessage().contains("map_files"), e.getMessage());
  }

  /** The case: the deleted library's path is now a symlink to a FIFO with a writer. */
  @Test
  void aDeletedModuleReplacedByASymlinkToAFifoLeavesTheFifoAlone() throws Exception {
    Path fifo = Files.createDirectories(targetRoot().resolve("tmp")).resolve("fifo");
    try (BlockedWriter writer = BlockedWriter.on(fifo)) {
      Path lib = Files.createDirectories(targetRoot().resolve("lib")).resolve("libc.so.6");
      Files.createSymbolicLink(lib, Path.of("/tmp/fifo")); // the target's own /tmp
      // The inode the mapping claims: a FIFO reached by the link would not match, but it must
      // not even be opened; claim the FIFO's own identity so only the deleted rule can refuse.
      ModuleOpenException e = assertThrows(ModuleOpenException.class,
          () -> opener().open(PID, mappingOf("/lib/libc.so.6", fifo, true)));
      assertEquals("deleted", e.reason(), e.getMessage());
      assertTrue(writer.stillBlockedAfter(300), "polystack opened the FIFO");
    }
  }

  /**
   * With map_files readable (root here), a real process's deleted executable still opens: the
   * mapped inode itself, checked against the mapping.
   */
  @Test
  void aRealDeletedExecutableOpensThroughMapFiles() throws Exception {
    Path copy = dir.resolve("sleep-copy");
    Files.copy(Path.of("/bin/sleep"), copy);
    Files.setPosixFilePermissions(copy, PosixFilePermissions.fromString("rwxr-xr-x"));
    Process sleeper = new ProcessBuilder(copy.toString(), "30").start();
    try {
      int pid = (int) sleeper.pid();
      MappedFile module = awaitModule(pid, copy.toString());
      Files.delete(copy);
      MappedFile deleted = awaitModule(pid, copy.toString());
      assertTrue(deleted.deleted(), deleted.toString());
      ElfFile elf = new ModuleOpener().open(pid, deleted);
      assertTrue(elf.executableRanges().size() > 0, elf.toString());
      assertEquals(module.inode(), deleted.inode());
    } finally {
      sleeper.destroy();
      sleeper.waitFor();
    }
  }

  private static MappedFile awaitModule(int pid, String path) throws Exception {
    long deadline = System.nanoTime() + 10_000_000_000L;
    while (true) {
      for (MappedFile m : ProcFs.system().forPid(pid).maps().modules()) {
        if (m.path().equals(path) && !m.executableMappings().isEmpty()) {
          return m;
        }
      }
      if (System.nanoTime() > deadline) {
        throw new AssertionError("process " + pid + " never mapped " + path);
      }
      Thread.sleep(10);
    }
  }

  /**
   * Past MAX_CACHED_FILES parsed files the least recently opened one is parsed again; recent ones
   * come from the cache. Distinct cached identities, one small ELF file: every path is a
   * symlink inside the target's root to the same copy of the system's true(1).
   */
  @Test
  void moreFilesThanCachedEvictTheLeastRecentlyOpened() throws Exception {
    Path lib = Files.createDirectories(targetRoot().resolve("lib"));
    Path file = lib.resolve("true.elf");
    Files.copy(Path.of("/bin/true").toRealPath(), file);
    ModuleOpener opener = opener();
    List<ElfFile> opened = new java.util.ArrayList<>();
    for (int i = 0; i <= ModuleOpener.MAX_CACHED_FILES; i++) {
      Files.createSymbolicLink(lib.resolve("l" + i + ".so"), Path.of("true.elf"));
      opened.add(opener.open(PID, mappingOf("/lib/l" + i + ".so", file)));
    }
    int last = ModuleOpener.MAX_CACHED_FILES;
    assertSame(opened.get(last), opener.open(PID, mappingOf("/lib/l" + last + ".so", file)),
        "a recent file comes from the cache");
    ElfFile again = opener.open(PID, mappingOf("/lib/l0.so", file));
    assertNotSame(opened.get(0), again, "the least recently opened file was evicted");
    assertSame(again, opener.open(PID, mappingOf("/lib/l0.so", file)), "then cached again");
  }
}
