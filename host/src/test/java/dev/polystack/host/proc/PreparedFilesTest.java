package dev.polystack.host.proc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Hand-written /proc files, well-formed edge cases and hostile input, under a fake root. */
class PreparedFilesTest {
  private static final int PID = 4242;
  private static final String STAT_AFTER_STATE =
      " 1 4242 4242 0 -1 4194560 100 0 2 0 7 3 0 0 20 0 1 0 123456 2863104 230 "
          + "18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 3 0 0 0 0 0 0 0 0 0 0 0 0 0\n";

  private static final String STAT_TAIL = " S" + STAT_AFTER_STATE;
  @TempDir Path root;
  private Path dir;
  private ProcessView view;

  @BeforeEach
  void setUp() throws Exception {
    dir = Files.createDirectories(root.resolve(Integer.toString(PID)));
    view = ProcFs.at(root).forPid(PID);
  }

  private void write(String name, String content) throws Exception {
    Path file = dir.resolve(name);
    Files.createDirectories(file.getParent());
    Files.write(file, content.getBytes(StandardCharsets.UTF_8));
  }

  private ProcReadException malformed(ThrowingCall call) {
    ProcReadException e = assertThrows(ProcReadException.class, call::run);
    assertEquals(ProcReadException.Reason.MALFORMED, e.reason(), e.getMessage());
    return e;
  }

  @Test
  void mapsEdgeCases() throws Exception {
    write(
        "maps",
        "00400000-00452000 r-xp 00000000 08:02 173521      /usr/bin/with space\n"
            + "00652000-00655000 rw-p 00052000 08:02 173521      /usr/bin/with space\n"
            + "00e03000-00e24000 rw-p 00000000 00:00 0           [heap]\n"
            + "7f0000000000-7f0000001000 r-xs 00001000 103:1f 18446744073709551615 "
            + "/tmp/x (deleted) (deleted)\n"
            + "7f0000001000-7f0000002000 ---p 00000000 00:00 0\n"
            + "7f0000002000-7f0000003000 rw-p 00000000 00:00 0 \n"
            + "7ffc00000000-7ffc00021000 rw-p 00000000 00:00 0                          [stack]\n"
            + "7ffc00100000-7ffc00104000 r--p 00000000 00:00 0                          [vvar]\n"
            + "7ffc00104000-7ffc00106000 r-xp 00000000 00:00 0                          [vdso]\n"
            + "ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  "
            + "[vsyscall]\n");
    ProcessMaps maps = view.maps();
    assertEquals(10, maps.size());
    MemoryMapping first = maps.mappings().get(0);
    assertEquals("/usr/bin/with space", first.path());
    assertEquals(new DeviceNumber(8, 2), first.device());
    assertTrue(first.permissions().readable() && first.permissions().executable());
    assertFalse(first.permissions().writable() || first.permissions().shared());
    assertEquals("r-xp", first.permissions().raw());

    MemoryMapping deleted = maps.mappings().get(3);
    assertTrue(deleted.deleted());
    assertEquals("/tmp/x (deleted)", deleted.path());
    assertEquals(-1L, deleted.inode()); // u64 max
    assertEquals(new DeviceNumber(0x103, 0x1f), deleted.device());
    assertTrue(deleted.permissions().shared());

    assertEquals(MappingKind.ANONYMOUS, maps.mappings().get(4).kind());
    assertEquals("", maps.mappings().get(5).path());
    assertEquals(MappingKind.HEAP, maps.mappings().get(2).kind());
    assertEquals(MappingKind.STACK, maps.mappings().get(6).kind());
    assertEquals(MappingKind.VVAR, maps.mappings().get(7).kind());
    assertEquals(MappingKind.VDSO, maps.mappings().get(8).kind());

    // [vsyscall] is above 2^63: lookups must compare unsigned.
    MemoryMapping vsyscall = maps.find(0xffffffffff600800L).orElseThrow();
    assertEquals(MappingKind.VSYSCALL, vsyscall.kind());
    assertTrue(maps.find(0x00452000L).isEmpty());
    assertTrue(maps.find(0x003fffffL).isEmpty());
    assertEquals(first, maps.find(0x00400000L).orElseThrow());
    assertTrue(maps.find(0xffffffffffffffffL).isEmpty());

    List<MappedFile> modules = maps.modules();
    assertEquals(2, modules.size());
    assertEquals(2, modules.get(0).mappings().size());
    assertEquals(0x00400000L, modules.get(0).loadBase());
    assertEquals(0x00655000L, modules.get(0).end());
    assertEquals(4, maps.executableMappings().size());
  }

  @Test
  void emptyMapsIsValid() throws Exception {
    // Kernel threads and zombies have no mm and an empty maps file.
    write("maps", "");
    assertEquals(0, view.maps().size());
  }

  @ParameterizedTest
  @ValueSource(
      strings = {
        "00400000-00452000 r-xp 00000000 08:02 173521 /bin/x", // no newline: truncated
        "00400000-00452000 r-xp 00000000 08:02\n",
        "00400000-00452000 r-xp\n",
        "00400000-00452000\n",
        "00400000\n",
        "\n",
        "garbage\n",
        "\u0000\u0001\u0002\n",
        "00400000-00452000 r-xq 00000000 08:02 1 /x\n",
        "00400000-00452000 rwxps 00000000 08:02 1 /x\n",
        "00452000-00400000 r-xp 00000000 08:02 1 /x\n",
        "00400000-00400000 r-xp 00000000 08:02 1 /x\n",
        "00400000-1ffffffffffffffff r-xp 00000000 08:02 1 /x\n",
        "00400000-00452000 r-xp 00000000 08:02 18446744073709551616 /x\n",
        "00400000-00452000 r-xp 00000000 08:02 99999999999999999999999 /x\n",
        "00400000-00452000 r-xp 00000000 1000:02 1 /x\n",
        "00400000-00452000 r-xp 00000000 08-02 1 /x\n",
        "00400000-00452000 r-xp 0000g000 08:02 1 /x\n",
        "00400000-00452000 r-xp 00000000 08:02 -1 /x\n",
        "0x400000-00452000 r-xp 00000000 08:02 1 /x\n",
        "00400000-00452000 r-xp 00000000 08:02 1 /x\u0000y\n",
        "00400000-00500000 r-xp 00000000 08:02 1 /x\n00450000-00600000 r-xp 0 08:02 1 /x\n",
        "00500000-00600000 r-xp 00000000 08:02 1 /x\n00400000-00450000 r-xp 0 08:02 1 /x\n",
      })
  void malformedMapsAreRejected(String content) throws Exception {
    write("maps", content);
    ProcReadException e = malformed(view::maps);
    assertEquals(dir.resolve("maps"), e.file());
    assertEquals("memory maps", e.what());
  }

  @Test
  void mapsBoundsAreEnforced() throws Exception {
    String line = "00400000-00452000 r-xp 00000000 08:02 1 /" + "a".repeat(200) + "\n";
    write("maps", line);
    ProcLimits defaults = ProcLimits.defaults();
    ProcLimits tiny =
        new ProcLimits(
            100, 8192, 10, defaults.maxSmallFileBytes(), defaults.maxAuxvBytes(),
            defaults.maxCmdlineBytes(), defaults.maxTasks());
    ProcReadException tooBig =
        assertThrows(ProcReadException.class, () -> ProcFs.at(root, tiny).forPid(PID).maps());
    assertEquals(ProcReadException.Reason.TOO_LARGE, tooBig.reason());

    ProcLimits shortLines =
        new ProcLimits(
            1 << 20, 100, 10, defaults.maxSmallFileBytes(), defaults.maxAuxvBytes(),
            defaults.maxCmdlineBytes(), defaults.maxTasks());
    assertEquals(
        ProcReadException.Reason.MALFORMED,
        assertThrows(ProcReadException.class, () -> ProcFs.at(root, shortLines).forPid(PID).maps())
            .reason());

    StringBuilder many = new StringBuilder();
    for (int i = 0; i < 11; i++) {
      many.append(String.format("%08x-%08x r--p 00000000 00:00 0%n", i * 4096, i * 4096 + 4096));
    }
    write("maps", many.toString());
    ProcLimits fewMappings =
        new ProcLimits(
            1 << 20, 8192, 10, defaults.maxSmallFileBytes(), defaults.maxAuxvBytes(),
            defaults.maxCmdlineBytes(), defaults.maxTasks());
    assertEquals(
        ProcReadException.Reason.TOO_LARGE,
        assertThrows(
                ProcReadException.class, () -> ProcFs.at(root, fewMappings).forPid(PID).maps())
            .reason());
  }

  private static byte[] auxv(long... words) {
    ByteBuffer b = ByteBuffer.allocate(words.length * 8).order(ByteOrder.LITTLE_ENDIAN);
    for (long w : words) {
      b.putLong(w);
    }
    return b.array();
  }

  @Test
  void auxvParsing() throws Exception {
    Files.write(
        dir.resolve("auxv"),
        auxv(33, 0x7ffc00104000L, 6, 4096, 999, 7, 16, 0xbfebfbffL, 0, 0, 5, 5));
    AuxVector v = view.auxv();
    assertEquals(4, v.entries().size()); // stops at AT_NULL, ignores what follows
    assertEquals(0x7ffc00104000L, v.vdsoBase().orElseThrow());
    assertEquals(4096, v.pageSize().orElseThrow());
    assertEquals("AT_999", v.entries().get(2).name());
    assertEquals("AT_HWCAP", v.entries().get(3).name());
    assertEquals(AuxvType.AT_SYSINFO_EHDR, v.entries().get(0).knownType().orElseThrow());
    assertTrue(v.entryPoint().isEmpty());
  }

  @Test
  void malformedAuxv() throws Exception {
    byte[] good = auxv(33, 1, 0, 0);
    for (int len : new int[] {0, 1, 8, 15, 17, 31}) {
      byte[] cut = new byte[len];
      System.arraycopy(good, 0, cut, 0, Math.min(len, good.length));
      Files.write(dir.resolve("auxv"), cut);
      malformed(view::auxv);
    }
    Files.write(dir.resolve("auxv"), auxv(33, 1, 6, 4096)); // no AT_NULL
    malformed(view::auxv);
    Files.write(dir.resolve("auxv"), new byte[128 << 10]);
    assertEquals(
        ProcReadException.Reason.TOO_LARGE,
        assertThrows(ProcReadException.class, view::auxv).reason());
  }

  @Test
  void statWithHostileComm() throws Exception {
    write("stat", PID + " (a) (b) ) c)" + STAT_TAIL);
    TaskStat s = view.stat();
    assertEquals("a) (b) ) c", s.comm());
    assertEquals(ThreadState.SLEEPING, s.state());
    assertEquals(1, s.ppid());
    assertEquals(7, s.utime());
    assertEquals(3, s.stime());
    assertEquals(123456, s.startTime());
    assertEquals(3, s.processor());
    assertEquals(1, s.numThreads());

    write("stat", PID + " ()" + STAT_TAIL.replace(" S ", " t "));
    assertEquals("", view.stat().comm());
    assertTrue(view.stat().state().isStopped());
    write("stat", PID + " (x\ny)" + STAT_TAIL.replace(" S ", " I "));
    assertEquals("x\ny", view.stat().comm());
    assertEquals(ThreadState.IDLE, view.stat().state());
  }

  @ParameterizedTest
  @ValueSource(
      strings = {
        "",
        "\n",
        "garbage\n",
        "4242 (x) S 1 2 3\n",
        "4242 x S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26\n",
        "4242 (x)\n",
        "4242 (x)S\n",
        "(x) S 1\n",
        "-1 (x)" + STAT_TAIL,
        "99999999999 (x)" + STAT_TAIL,
        "4242 (x) Q" + STAT_AFTER_STATE,
        "4242 (x) SS" + STAT_AFTER_STATE,
        "4242 (x)" + " S 1 4242 4242 0 -1 4194560 100 0 2 0 -7 3 0 0 20 0 1 0 1 2 3 4 5 6 7 8 9"
            + " 10 11 12 13 14 15 16 17 18 19 20 21\n",
        "4242 (x)" + " S 1 4242 4242 0 -1 4194560 100 0 2 0 99999999999999999999999 3 0 0 20 0 1"
            + " 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21\n",
        "4242 (x)" + " S 1 4242 4242 0 -1 4194560 100 0 2 0 +7 3 0 0 20 0 1 0 1 2 3 4 5 6 7 8 9"
            + " 10 11 12 13 14 15 16 17 18 19 20 21\n",
        "4242 (x)" + " S 1  4242 0 -1 4194560 100 0 2 0 7 3 0 0 20 0 1 0 1 2 3 4 5 6 7 8 9"
            + " 10 11 12 13 14 15 16 17 18 19 20 21\n",
      })
  void malformedStat(String content) throws Exception {
    write("stat", content);
    malformed(view::stat);
  }

  private static final String STATUS =
      "Name:\tprobe\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t4242\nNgid:\t0\nPid:\t4242\n"
          + "PPid:\t1\nTracerPid:\t77\nUid:\t1000\t1001\t1002\t1003\nGid:\t0\t0\t0\t0\n"
          + "NSpid:\t4242\t7\n";

  @Test
  void statusFields() throws Exception {
    write("status", STATUS);
    ProcessStatus s = view.status();
    assertEquals(77, s.tracerPid());
    assertTrue(s.isTraced());
    assertEquals(ThreadState.SLEEPING, s.state());
    assertEquals(4242, s.tgid());
    assertEquals(new ProcessStatus.IdSet(1000, 1001, 1002, 1003), s.uid());
    assertEquals(List.of(4242, 7), s.nsPids());
    assertEquals("0022", s.get("Umask").orElseThrow());
    assertTrue(s.get("Nope").isEmpty());
    write("status", STATUS.replace("NSpid:\t4242\t7\n", ""));
    assertTrue(view.status().nsPids().isEmpty());
  }

  @ParameterizedTest
  @ValueSource(
      strings = {
        "",
        "garbage\n",
        "Name:\tprobe", // truncated
        "drop TracerPid:",
        "drop Uid:",
        "drop State:",
        "TracerPid:\t0x1\n",
        "Name:\tx\nName:\ty\n",
        ":\tx\n",
        "State:\tQ (weird)\n",
        "TracerPid:\t-1\n",
        "TracerPid:\t99999999999\n",
        "Tgid:\t0\n",
        "Uid:\t1\t2\n",
        "Uid:\t1\t2\t3\t99999999999\n",
        "NSpid:\t4242\tx\n",
        "NSpid:\n",
      })
  void malformedStatus(String replacement) throws Exception {
    String content;
    if (replacement.startsWith("drop ")) {
      String key = replacement.substring(5);
      content = STATUS.lines().filter(l -> !l.startsWith(key)).reduce("", (a, l) -> a + l + "\n");
    } else if (replacement.isEmpty() || !replacement.contains(":") || !replacement.endsWith("\n")) {
      content = replacement;
    } else {
      String key = replacement.substring(0, replacement.indexOf(':') + 1);
      content =
          STATUS.lines()
                  .filter(l -> !l.startsWith(key) || key.equals(":"))
                  .reduce("", (a, l) -> a + l + "\n")
              + replacement;
    }
    write("status", content);
    malformed(view::status);
  }

  @Test
  void cmdlineAndComm() throws Exception {
    write("cmdline", "/bin/prog\u0000arg with space\u0000\u0000last\u0000");
    assertEquals(List.of("/bin/prog", "arg with space", "", "last"), view.cmdline().arguments());
    write("cmdline", "");
    assertTrue(view.cmdline().arguments().isEmpty());
    write("cmdline", "rewritten title no nul");
    assertEquals(List.of("rewritten title no nul"), view.cmdline().arguments());

    ProcLimits d = ProcLimits.defaults();
    ProcLimits small =
        new ProcLimits(
            d.maxMapsBytes(), d.maxLineBytes(), d.maxMappings(), d.maxSmallFileBytes(),
            d.maxAuxvBytes(), 10, d.maxTasks());
    write("cmdline", "0123456\u0000abcdef\u0000");
    CommandLine cut = ProcFs.at(root, small).forPid(PID).cmdline();
    assertTrue(cut.truncated());
    assertEquals(List.of("0123456", "ab"), cut.arguments());

    write("task/4242/comm", "a) b\n");
    assertEquals("a) b", view.threadName(4242));
    write("task/4242/comm", "no newline");
    malformed(() -> view.threadName(4242));
  }

  @Test
  void taskListingAndVanishedThreads() throws Exception {
    write("task/4242/stat", "4242 (main)" + STAT_TAIL);
    write("task/4250/stat", "4250 (w)" + STAT_TAIL);
    Files.createDirectories(dir.resolve("task"));
    // A listed thread whose directory is already gone, as when it exits mid-scan.
    Files.createSymbolicLink(dir.resolve("task/4243"), dir.resolve("task/gone"));
    write("task/10/stat", "10 (low)" + STAT_TAIL);
    assertEquals(List.of(10, 4242, 4243, 4250), view.taskIds());
    List<TaskStat> stats = view.taskStats();
    assertEquals(List.of(10, 4242, 4250), stats.stream().map(TaskStat::pid).toList());

    ProcReadException gone = assertThrows(ProcReadException.class, () -> view.taskStat(4243));
    assertEquals(ProcReadException.Reason.NO_SUCH_PROCESS, gone.reason());
    assertTrue(gone.getMessage().contains("thread 4243 of process 4242 does not exist"));

    write("task/4250/stat", "garbage\n");
    malformed(view::taskStats);

    Files.createDirectories(dir.resolve("task/notanumber"));
    malformed(view::taskIds);
  }

  @Test
  void missingFileInExistingProcessIsNotAvailable() throws Exception {
    ProcReadException e = assertThrows(ProcReadException.class, view::exe);
    assertEquals(ProcReadException.Reason.NOT_AVAILABLE, e.reason());
    Files.createSymbolicLink(dir.resolve("exe"), Path.of("/usr/bin/prog (deleted)"));
    assertEquals("/usr/bin/prog (deleted)", view.exe());
  }

  @Test
  void unreadableFileAsksForPrivileges() throws Exception {
    write("maps", "");
    Path maps = dir.resolve("maps");
    maps.toFile().setReadable(false, false);
    try {
      // Root bypasses file modes; the mapping of EACCES is still checked via translate below.
      if (!Files.isReadable(maps)) {
        ProcReadException e = assertThrows(ProcReadException.class, view::maps);
        assertEquals(ProcReadException.Reason.ACCESS_DENIED, e.reason());
      }
    } finally {
      maps.toFile().setReadable(true, false);
    }
    ProcReadException e =
        ProcFiles.translate(
            new java.nio.file.AccessDeniedException(maps.toString()),
            "memory maps",
            maps,
            new ProcFiles.Subject("process " + PID, dir));
    assertEquals(ProcReadException.Reason.ACCESS_DENIED, e.reason());
    assertTrue(e.getMessage().contains("run as root or grant CAP_SYS_PTRACE"), e.getMessage());
  }

  @Test
  void invalidArgumentsAreProgrammerErrors() {
    assertThrows(IllegalArgumentException.class, () -> ProcFs.system().forPid(0));
    assertThrows(IllegalArgumentException.class, () -> view.taskStat(-1));
    assertThrows(
        IllegalArgumentException.class,
        () -> new ProcLimits(0, 1, 1, 1, 1, 1, 1));
  }

  @FunctionalInterface
  interface ThrowingCall {
    Object run() throws Exception;
  }
}
