package dev.polystack.host.process;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.polystack.host.memory.ProcessMemory;
import dev.polystack.host.modules.ModuleOpener;
import dev.polystack.host.plugins.LoadedPlugin;
import dev.polystack.host.plugins.PluginGuard;
import dev.polystack.host.plugins.PluginRegistry;
import dev.polystack.host.proc.DeviceNumber;
import dev.polystack.host.proc.MappedFile;
import dev.polystack.host.proc.MemoryMapping;
import dev.polystack.host.proc.Permissions;
import dev.polystack.host.proc.ProcFs;
import dev.polystack.plugin.api.ApiVersion;
import dev.polystack.plugin.api.Capability;
import dev.polystack.plugin.api.Inspection;
import dev.polystack.plugin.api.ModuleImage;
import dev.polystack.plugin.api.PluginDescriptor;
import dev.polystack.plugin.api.RuntimePlugin;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;

/** RuntimePlugin's promise: one inspection per distinct binary, however many processes map it. */
class RuntimeInspectionsTest {

  /** Counts what it is asked to inspect, by module path; never claims a module. */
  static final class CountingPlugin implements RuntimePlugin {
    final ConcurrentHashMap<String, Integer> inspected = new ConcurrentHashMap<>();

    @Override
    public PluginDescriptor descriptor() {
      return new PluginDescriptor("counting", "1.0.0", ApiVersion.CURRENT, "",
          Set.of(Capability.DETECT), "counts inspections");
    }

    @Override
    public Inspection inspect(ModuleImage image) {
      inspected.merge(image.name(), 1, Integer::sum);
      return Inspection.notMine();
    }
  }

  @Test
  void processesMappingTheSameBinariesShareOneInspectionEach() throws Exception {
    CountingPlugin plugin = new CountingPlugin();
    PluginRegistry plugins = new PluginRegistry(
        List.of(new LoadedPlugin(plugin, plugin.descriptor(), "test")), List.of());
    RuntimeInspections shared = new RuntimeInspections(RuntimeInspections.CAPACITY);
    ModuleOpener opener = new ModuleOpener();
    List<String> warnings = new ArrayList<>();
    List<Process> sleepers = new ArrayList<>();
    try {
      for (int i = 0; i < 3; i++) {
        sleepers.add(started("sleep", "30"));
      }
      for (Process p : sleepers) {
        int pid = (int) p.pid();
        try (TargetProcess target = new TargetProcess(pid, ProcFs.system(), opener,
            ProcessMemory.of(pid), plugins, new PluginGuard(warnings::add), shared,
            warnings::add)) {
          target.refresh();
          assertTrue(target.table().modules().size() >= 3, target.table().modules().toString());
        }
      }
    } finally {
      for (Process p : sleepers) {
        p.destroy();
        p.waitFor(5, TimeUnit.SECONDS);
      }
    }
    // sleep, libc and ld.so at least, each asked about once for three processes.
    assertTrue(plugin.inspected.size() >= 3, plugin.inspected.toString());
    plugin.inspected.forEach((path, times) -> assertEquals(1, times, path));
    assertTrue(warnings.isEmpty(), warnings.toString());

    // Without the shared answers, each process asks again.
    CountingPlugin alone = new CountingPlugin();
    PluginRegistry own = new PluginRegistry(
        List.of(new LoadedPlugin(alone, alone.descriptor(), "test")), List.of());
    Process a = started("sleep", "30");
    Process b = started("sleep", "30");
    try {
      for (Process p : List.of(a, b)) {
        int pid = (int) p.pid();
        try (TargetProcess target = new TargetProcess(pid, ProcFs.system(), opener,
            ProcessMemory.of(pid), own, new PluginGuard(warnings::add), warnings::add)) {
          target.refresh();
        }
      }
    } finally {
      a.destroy();
      b.destroy();
    }
    assertTrue(alone.inspected.size() >= 3, alone.inspected.toString());
    alone.inspected.forEach((path, times) -> assertEquals(2, times, path));
  }

  /**
   * A slow inspection holds up only the callers that want its answer: another binary's is
   * answered meanwhile, the same binary's waits and gets the one answer; a failed one is asked
   * again.
   */
  @Test
  void aSlowInspectionHoldsUpOnlyItsOwnBinary() throws Exception {
    RuntimeInspections inspections = new RuntimeInspections(8);
    MappedFile slow = file("/usr/bin/slow", 1);
    MappedFile quick = file("/usr/bin/quick", 2);
    CountDownLatch started = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    AtomicInteger asked = new AtomicInteger();
    ExecutorService pool = Executors.newFixedThreadPool(2);
    try {
      Supplier<Optional<Inspection>> slowly = () -> {
        asked.incrementAndGet();
        started.countDown();
        try {
          release.await();
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
        return Optional.of(Inspection.notMine());
      };
      Future<Optional<Inspection>> first = pool.submit(() -> inspections.of(slow, "p", slowly));
      assertTrue(started.await(10, TimeUnit.SECONDS));
      Future<Optional<Inspection>> second = pool.submit(() -> inspections.of(slow, "p", slowly));
      assertEquals(Optional.empty(), inspections.of(quick, "p", Optional::empty),
          "another binary answered while the slow one runs");
      assertFalse(second.isDone());
      release.countDown();
      assertSame(first.get(10, TimeUnit.SECONDS).orElseThrow(),
          second.get(10, TimeUnit.SECONDS).orElseThrow());
      assertEquals(1, asked.get());
    } finally {
      release.countDown();
      pool.shutdownNow();
    }
    assertThrows(IllegalStateException.class, () -> inspections.of(quick, "q", () -> {
      throw new IllegalStateException("plug-in bug");
    }));
    assertEquals(Optional.empty(), inspections.of(quick, "q", Optional::empty), "asked again");
  }

  private static MappedFile file(String path, long inode) {
    DeviceNumber device = new DeviceNumber(8, 1);
    MemoryMapping m = new MemoryMapping(0x7f0000000000L, 0x7f0000001000L,
        new Permissions("r-xp", true, false, true, false), 0, device, inode, path, false);
    return new MappedFile(path, device, inode, false, List.of(m));
  }

  /** A process whose dynamic loader has mapped libc: right after exec only ld.so is there. */
  private static Process started(String... command) throws Exception {
    Process p = new ProcessBuilder(command).start();
    Path maps = Path.of("/proc/" + p.pid() + "/maps");
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (!Files.readString(maps).contains("/libc.so")) {
      if (System.nanoTime() > deadline) {
        p.destroy();
        throw new AssertionError(String.join(" ", command) + " did not map libc in 10 s");
      }
      Thread.sleep(5);
    }
    return p;
  }
}
