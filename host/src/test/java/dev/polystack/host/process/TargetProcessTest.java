package dev.polystack.host.process;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.polystack.host.memory.ProcessMemory;
import dev.polystack.host.modules.ModuleOpener;
import dev.polystack.host.plugins.PluginGuard;
import dev.polystack.host.plugins.PluginLoader;
import dev.polystack.host.proc.ProcFs;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The module table's bounds on a real process (python3 mapping files executable on request):
 * a file that cannot be opened is tried, counted and warned about once while it stays mapped,
 * not at every refresh; modules beyond the cap are not opened, counted once, with one warning.
 */
class TargetProcessTest {
  /** Maps each file named on a stdin line executable, then says "mapped". */
  static final String MAPPER = """
      import mmap, sys
      held = []
      print("ready", flush=True)
      for line in sys.stdin:
          for path in line.split():
              with open(path, "rb") as f:
                  held.append(mmap.mmap(f.fileno(), 0, flags=mmap.MAP_PRIVATE,
                                        prot=mmap.PROT_READ | mmap.PROT_EXEC))
          print("mapped", flush=True)
      """;

  @TempDir Path dir;
  private Process process;
  private BufferedReader out;
  private Writer in;
  private final List<String> warnings = new ArrayList<>();

  @AfterEach
  void stop() throws Exception {
    if (process != null) {
      process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
    }
  }

  @Test
  void aModuleThatCannotBeOpenedIsTriedAndWarnedAboutOnce() throws Exception {
    Path notElf = dir.resolve("not-elf.bin");
    Files.write(notElf, new byte[8192]);
    start();
    try (TargetProcess target = target(TargetProcess.MAX_MODULES)) {
      target.refresh();
      target.getAndResetCounters();
      int before = warnings.size();
      map(notElf);
      for (int i = 0; i < 3; i++) {
        target.refresh();
      }
      assertEquals(Map.of("module_not_elf", 1L), target.getAndResetCounters());
      List<String> added = warnings.subList(before, warnings.size());
      assertEquals(1, added.size(), added.toString());
      assertTrue(added.get(0).contains(notElf.toString()), added.get(0));
    }
  }

  @Test
  void modulesBeyondTheCapAreNotOpenedAndCountedOnce() throws Exception {
    List<Path> copies = new ArrayList<>();
    for (int i = 0; i < 4; i++) {
      Path copy = dir.resolve("true-" + i);
      Files.copy(Path.of("/usr/bin/true"), copy);
      copies.add(copy);
    }
    start();
    int own;
    try (TargetProcess uncapped = target(TargetProcess.MAX_MODULES)) {
      uncapped.refresh();
      own = fileModules(uncapped);
    }
    try (TargetProcess target = target(own + 2)) {
      target.refresh();
      assertEquals(own, fileModules(target));
      target.getAndResetCounters();
      int before = warnings.size();
      map(copies.toArray(Path[]::new));
      for (int i = 0; i < 3; i++) {
        target.refresh();
        assertEquals(own + 2, fileModules(target), "the cap holds at every refresh");
      }
      assertEquals(Map.of("module_over_cap", 2L), target.getAndResetCounters());
      List<String> added = warnings.subList(before, warnings.size());
      assertEquals(1, added.size(), added.toString());
      assertTrue(added.get(0).contains("more than " + (own + 2) + " modules"), added.get(0));
      long opened = target.table().modules().stream()
          .filter(m -> m.path().startsWith(dir.toString())).count();
      assertEquals(2, opened);
    }
  }

  private static int fileModules(TargetProcess target) {
    return (int) target.table().modules().stream().filter(m -> !m.path().equals("[vdso]"))
        .count();
  }

  private TargetProcess target(int maxModules) throws Exception {
    int pid = (int) process.pid();
    ProcFs proc = ProcFs.system();
    return new TargetProcess(pid, () -> proc.forPid(pid).maps(), new ModuleOpener(),
        ProcessMemory.of(pid), new PluginLoader().load(List.of()),
        new PluginGuard(warnings::add), new RuntimeInspections(8), warnings::add, maxModules);
  }

  private void start() throws Exception {
    process = new ProcessBuilder("python3", "-c", MAPPER).redirectErrorStream(true).start();
    out = new BufferedReader(new InputStreamReader(process.getInputStream(),
        StandardCharsets.UTF_8));
    in = new java.io.OutputStreamWriter(process.getOutputStream(), StandardCharsets.UTF_8);
    assertEquals("ready", out.readLine());
  }

  private void map(Path... files) throws Exception {
    List<String> names = new ArrayList<>();
    for (Path f : files) {
      names.add(f.toString());
    }
    in.write(String.join(" ", names) + "\n");
    in.flush();
    assertEquals("mapped", out.readLine());
  }
}
