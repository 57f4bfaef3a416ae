package dev.polystack.host.proc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Reads real /proc entries of a live child process. */
class LiveProcessTest {
  @TempDir static Path workDir;
  private static Path probeBinary;

  private final ProcFs procFs = ProcFs.system();

  @BeforeAll
  static void compileProbe() throws Exception {
    probeBinary = Probe.compile(workDir).toRealPath();
  }

  @Test
  void mapsOfChildContainExecutableStackAndVdso() throws Exception {
    try (Probe probe = Probe.start(probeBinary)) {
      ProcessView view = procFs.forPid(probe.pid());
      ProcessMaps maps = view.maps();
      String exe = view.exe();
      assertEquals(probeBinary.toString(), exe);

      MappedFile main =
          maps.modules().stream().filter(m -> m.path().equals(exe)).findFirst().orElseThrow();
      assertFalse(main.executableMappings().isEmpty(), "executable mapping of " + exe);
      assertFalse(main.deleted());
      assertTrue(maps.first(MappingKind.STACK).isPresent());
      MemoryMapping vdso = maps.first(MappingKind.VDSO).orElseThrow();
      assertTrue(vdso.isExecutable());
      assertEquals("[vdso]", vdso.path());

      // Lookup by address lands in the right mapping, including first/last byte edges.
      MemoryMapping text = main.executableMappings().get(0);
      assertEquals(text, maps.find(text.start()).orElseThrow());
      assertEquals(text, maps.find(text.end() - 1).orElseThrow());
      assertEquals(main, maps.findModule(text.start() + 1).orElseThrow());
      assertTrue(maps.find(0).isEmpty());
    }
  }

  @Test
  void auxvMatchesMaps() throws Exception {
    try (Probe probe = Probe.start(probeBinary)) {
      ProcessView view = procFs.forPid(probe.pid());
      AuxVector auxv = view.auxv();
      ProcessMaps maps = view.maps();
      assertEquals(4096L, auxv.pageSize().orElseThrow());
      assertEquals(
          maps.first(MappingKind.VDSO).orElseThrow().start(), auxv.vdsoBase().orElseThrow());
      long entry = auxv.entryPoint().orElseThrow();
      MemoryMapping entryMapping = maps.find(entry).orElseThrow();
      assertTrue(entryMapping.isExecutable());
      assertEquals(view.exe(), entryMapping.path());
      // Dynamically linked: AT_BASE is the loader, mapped from a file.
      assertTrue(maps.find(auxv.interpreterBase().orElseThrow()).orElseThrow().isFileBacked());
      assertTrue(auxv.entries().stream().anyMatch(e -> e.name().equals("AT_RANDOM")));
      assertEquals(0L, auxv.get(AuxvType.AT_SECURE).orElseThrow());
    }
  }

  @Test
  void threadsNamesAndStates() throws Exception {
    try (Probe probe = Probe.start(probeBinary)) {
      ProcessView view = procFs.forPid(probe.pid());
      List<Integer> tids = view.taskIds();
      assertEquals(4, tids.size(), tids.toString());
      assertTrue(tids.contains(probe.pid()), tids.toString()); // first only until pid_max wraps
      assertEquals(tids.stream().sorted().toList(), tids, "sorted");
      assertEquals(tids, view.taskIdsOrEmpty());
      Map<String, Integer> byName =
          tids.stream().collect(Collectors.toMap(tid -> nameOf(view, tid), tid -> tid));
      assertEquals(
          java.util.Set.of("probe", "worker-1", "worker-2", "a) b"), byName.keySet());

      TaskStat odd = view.taskStat(byName.get("a) b"));
      assertEquals("a) b", odd.comm());
      assertEquals(byName.get("a) b"), odd.pid());
      assertEquals((int) ProcessHandle.current().pid(), odd.ppid());

      // Threads reach pause() just after "ready"; allow a moment for them to sleep.
      List<TaskStat> stats = awaitAllSleeping(view);
      assertEquals(4, stats.size());
      for (TaskStat s : stats) {
        assertEquals(ThreadState.SLEEPING, s.state(), s.toString());
        assertFalse(s.state().isOnCpu());
        assertFalse(s.state().isStopped());
        assertTrue(s.processor() >= 0);
        assertTrue(s.startTime() > 0);
        assertEquals(4, s.numThreads());
      }
      TaskStat processStat = view.stat();
      assertEquals(probe.pid(), processStat.pid());
      assertEquals("probe", processStat.comm());
    }
  }

  @Test
  void cmdlineExeAndStatus() throws Exception {
    Path mapped = workDir.resolve("cmdline arg.bin");
    Files.write(mapped, new byte[8192]);
    try (Probe probe = Probe.start(probeBinary, mapped.toString())) {
      ProcessView view = procFs.forPid(probe.pid());
      CommandLine cmd = view.cmdline();
      assertEquals(List.of(probeBinary.toString(), mapped.toString()), cmd.arguments());
      assertFalse(cmd.truncated());

      ProcessStatus status = view.status();
      assertEquals(0, status.tracerPid());
      assertFalse(status.isTraced());
      assertEquals(probe.pid(), status.tgid());
      assertEquals(probe.pid(), status.pid());
      assertEquals("probe", status.name());
      assertEquals(ProcessHandle.current().pid(), status.ppid());
      if (!status.nsPids().isEmpty()) {
        assertEquals(probe.pid(), status.nsPids().get(0));
      }
      int worker = view.taskIds().get(1);
      ProcessStatus threadStatus = view.taskStatus(worker);
      assertEquals(worker, threadStatus.pid());
      assertEquals(probe.pid(), threadStatus.tgid());
    }
  }

  @Test
  void deletedMappedFileAndExecutable() throws Exception {
    Path dir = Files.createDirectories(workDir.resolve("deleted case"));
    Path library = dir.resolve("lib with space.so");
    Path binaryCopy = dir.resolve("probe-copy");
    Files.copy(probeBinary, library);
    Files.copy(probeBinary, binaryCopy);
    binaryCopy.toFile().setExecutable(true);
    try (Probe probe = Probe.start(binaryCopy, library.toString())) {
      Files.delete(library);
      Files.delete(binaryCopy);
      ProcessView view = procFs.forPid(probe.pid());
      MemoryMapping m =
          view.maps().mappings().stream()
              .filter(x -> x.path().equals(library.toString()))
              .findFirst()
              .orElseThrow(() -> new AssertionError("no mapping of " + library));
      assertTrue(m.deleted());
      assertTrue(m.isExecutable());
      assertTrue(m.isFileBacked());
      assertEquals(binaryCopy + " (deleted)", view.exe());
      MappedFile mod =
          view.maps().modules().stream()
              .filter(x -> x.path().equals(binaryCopy.toString()))
              .findFirst()
              .orElseThrow();
      assertTrue(mod.deleted());
    }
  }

  /**
   * The kernel writes /proc/PID/maps in chunks; threads that start and end meanwhile map and
   * unmap their stacks, which can put two chunks out of order. Every read still parses.
   */
  @Test
  void mapsReadWhileThreadsComeAndGoParse() throws Exception {
    ProcessView self = procFs.forPid((int) ProcessHandle.current().pid());
    var stop = new java.util.concurrent.atomic.AtomicBoolean();
    Thread churn = new Thread(() -> {
      while (!stop.get()) {
        Thread t = new Thread(() -> { });
        t.start();
        try {
          t.join();
        } catch (InterruptedException e) {
          return;
        }
      }
    });
    churn.start();
    try {
      for (int i = 0; i < 5000; i++) {
        assertFalse(self.maps().mappings().isEmpty());
      }
    } finally {
      stop.set(true);
      churn.join();
    }
  }

  @Test
  void ownJvmProcess() throws Exception {
    ProcessView self = procFs.forPid((int) ProcessHandle.current().pid());
    ProcessMaps maps = self.maps();
    assertTrue(
        maps.modules().stream().anyMatch(m -> m.path().endsWith("/libjvm.so")),
        "libjvm.so mapped");
    assertEquals(
        maps.first(MappingKind.VDSO).orElseThrow().start(), self.auxv().vdsoBase().orElseThrow());
    List<TaskStat> threads = self.taskStats();
    assertTrue(threads.size() > 1);
    assertTrue(threads.stream().anyMatch(t -> t.state().isOnCpu()), "this thread is running");
    // Sorted by tid, the leader is not always first: after pid_max wraps, later threads get
    // lower tids.
    assertTrue(threads.stream().anyMatch(t -> t.pid() == self.pid()), "the leader is listed");
    assertEquals(self.stat().numThreads(), self.taskIds().size(), 5.0);
  }

  @Test
  void exitedProcessHasClearMessage() throws Exception {
    Process p = new ProcessBuilder("true").start();
    int pid = (int) p.pid();
    p.waitFor();
    ProcessView view = procFs.forPid(pid);
    assertFalse(view.exists());
    ProcReadException e = assertThrows(ProcReadException.class, view::maps);
    assertEquals(ProcReadException.Reason.NO_SUCH_PROCESS, e.reason());
    assertTrue(
        e.getMessage().contains("process " + pid + " does not exist (it may have exited)"),
        e.getMessage());
    for (ThrowingCall call :
        List.<ThrowingCall>of(
            view::auxv, view::stat, view::status, view::exe, view::cmdline, view::taskIds,
            () -> view.threadName(pid), () -> view.taskStat(pid))) {
      ProcReadException ex = assertThrows(ProcReadException.class, call::run);
      assertEquals(ProcReadException.Reason.NO_SUCH_PROCESS, ex.reason(), ex.getMessage());
    }
    // Callers that seize or list threads treat a process that is gone as having none.
    assertEquals(List.of(), view.taskIdsOrEmpty());
    ProcReadException huge =
        assertThrows(ProcReadException.class, () -> procFs.forPid(Integer.MAX_VALUE).stat());
    assertTrue(huge.getMessage().contains("does not exist (it may have exited)"));
  }

  private static String nameOf(ProcessView view, int tid) {
    try {
      return view.threadName(tid);
    } catch (ProcReadException e) {
      throw new AssertionError(e);
    }
  }

  private static List<TaskStat> awaitAllSleeping(ProcessView view) throws Exception {
    long deadline = System.nanoTime() + 5_000_000_000L;
    while (true) {
      List<TaskStat> stats = view.taskStats();
      if (stats.stream().allMatch(s -> s.state() == ThreadState.SLEEPING)
          || System.nanoTime() > deadline) {
        return stats;
      }
      Thread.sleep(20);
    }
  }

  @FunctionalInterface
  interface ThrowingCall {
    Object run() throws Exception;
  }
}
