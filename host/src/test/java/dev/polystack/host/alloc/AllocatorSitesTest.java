package dev.polystack.host.alloc;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.polystack.host.bpf.AllocationProbes.Kind;
import dev.polystack.host.memory.ProcessMemory;
import dev.polystack.host.modules.ModuleOpener;
import dev.polystack.host.plugins.PluginGuard;
import dev.polystack.host.plugins.PluginRegistry;
import dev.polystack.host.proc.ProcFs;
import dev.polystack.host.process.TargetProcess;
import java.io.RandomAccessFile;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The C library's allocator sites in this JVM: each offset, read from the file, holds the bytes
 * the process runs at the site's runtime address, and functions sharing an address are one site.
 */
class AllocatorSitesTest {
  @Test
  void sitesPointAtTheCodeTheProcessRuns() throws Exception {
    int pid = (int) ProcessHandle.current().pid();
    List<String> warnings = new ArrayList<>();
    try (TargetProcess self = new TargetProcess(pid, ProcFs.system(), new ModuleOpener(),
        ProcessMemory.of(pid), new PluginRegistry(List.of(), List.of()),
        new PluginGuard(warnings::add), warnings::add)) {
      self.refresh();
      AllocatorSites sites = AllocatorSites.of(ProcFs.system(), pid, self.mappings());
      assertTrue(AllocatorSites.isLibc(sites.module()), sites.module());
      assertTrue(sites.kinds().containsAll(List.of(Kind.MALLOC, Kind.CALLOC, Kind.REALLOC,
          Kind.FREE, Kind.POSIX_MEMALIGN, Kind.MEMALIGN)), sites.names().toString());
      assertEquals(sites.offsets().length, new HashSet<>(
          java.util.Arrays.stream(sites.offsets()).boxed().toList()).size(), "distinct offsets");
      try (RandomAccessFile file = new RandomAccessFile(sites.file().toFile(), "r");
          RandomAccessFile mem = new RandomAccessFile("/proc/self/mem", "r")) {
        for (int i = 0; i < sites.offsets().length; i++) {
          byte[] inFile = new byte[16];
          byte[] running = new byte[16];
          file.seek(sites.offsets()[i]);
          file.readFully(inFile);
          mem.seek(sites.ranges().get(i)[0]);
          mem.readFully(running);
          assertArrayEquals(inFile, running, sites.names().get(i));
        }
      }
      assertEquals(List.of(0L, 1L), java.util.Arrays.stream(sites.cookies()).limit(2).boxed()
          .toList());
    }
  }

  /**
   * The order malloc is looked for in, from a /proc tree laid out as the kernel shows it: the
   * executable, LD_PRELOAD (by path or by name), ld.so.preload, other libraries, the C library.
   */
  @Test
  void mallocIsLookedForInTheOrderTheDynamicLinkerBindsIt(@org.junit.jupiter.api.io.TempDir
      java.nio.file.Path root) throws Exception {
    java.nio.file.Path pid = java.nio.file.Files.createDirectories(root.resolve("42"));
    java.nio.file.Files.createSymbolicLink(pid.resolve("exe"), java.nio.file.Path.of("/app/bin"));
    java.nio.file.Files.write(pid.resolve("environ"),
        "HOME=/root\0LD_PRELOAD=libpre.so.1:/opt/x/libpath.so \0TERM=x\0".getBytes());
    java.nio.file.Path etc = java.nio.file.Files.createDirectories(pid.resolve("root/etc"));
    java.nio.file.Files.writeString(etc.resolve("ld.so.preload"), "# comment\n/lib/libsys.so\n");
    List<dev.polystack.plugin.api.Mapping> maps = new ArrayList<>();
    String[] paths = {"/lib/x86_64-linux-gnu/libc.so.6", "/lib/libother.so", "/lib/libsys.so",
        "/opt/x/libpath.so", "/lib/x86_64-linux-gnu/libpre.so.1", "/app/bin",
        "/lib64/ld-linux-x86-64.so.2", "[vdso]"};
    for (int i = 0; i < paths.length; i++) {
      maps.add(new dev.polystack.plugin.api.Mapping(0x100000L * (i + 1),
          0x100000L * (i + 1) + 0x1000, 0, true, false, true, 0, 0, paths[i], false));
    }
    assertEquals(List.of("/app/bin", "/lib/x86_64-linux-gnu/libpre.so.1", "/opt/x/libpath.so",
        "/lib/libsys.so", "/lib/libother.so", "/lib/x86_64-linux-gnu/libc.so.6"),
        AllocatorSites.searchOrder(ProcFs.at(root), 42, maps));
  }

  @Test
  void textRangesAreBoundedByMergingTheClosest() {
    List<dev.polystack.plugin.api.Mapping> maps = new ArrayList<>();
    for (int i = 0; i < 40; i++) {
      maps.add(new dev.polystack.plugin.api.Mapping(0x10000L * (i + 1) + (i % 3) * 0x100,
          0x10000L * (i + 1) + 0x1000, 0, true, false, true, 0, 0, "/lib" + i, false));
    }
    List<long[]> ranges = AllocatorSites.textRanges(maps, 32);
    assertEquals(32, ranges.size());
    for (var m : maps) {
      assertTrue(ranges.stream().anyMatch(r -> r[0] <= m.start() && m.end() <= r[1]),
          "mapping 0x" + Long.toHexString(m.start()) + " lost");
    }
  }
}
