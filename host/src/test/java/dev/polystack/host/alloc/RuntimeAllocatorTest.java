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
import dev.polystack.plugin.api.AllocatorSite;
import dev.polystack.plugin.api.Mapping;
import java.io.RandomAccessFile;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * A runtime's allocator function named by its runtime address, in this JVM (libc's realloc
 * stands in for it): the file offset holds the bytes the process runs there and the range is
 * the function's, from its FDE; code in no file (the JVM's own JIT code) is refused.
 */
class RuntimeAllocatorTest {
  @Test
  void aFunctionOfAMappedFileResolvesToItsOffsetAndRange() throws Exception {
    int pid = (int) ProcessHandle.current().pid();
    List<String> warnings = new ArrayList<>();
    try (TargetProcess self = new TargetProcess(pid, ProcFs.system(), new ModuleOpener(),
        ProcessMemory.of(pid), new PluginRegistry(List.of(), List.of()),
        new PluginGuard(warnings::add), warnings::add)) {
      self.refresh();
      AllocatorSites libc = AllocatorSites.of(ProcFs.system(), pid, self.mappings());
      long realloc = libc.ranges().get(libc.kinds().indexOf(Kind.REALLOC))[0];
      RuntimeAllocator a = RuntimeAllocator.resolve(pid, self.mappings(), self.table(),
          new AllocatorSite(realloc + 1, AllocatorSite.Convention.LUA_ALLOC, "lua_Alloc"))
          .orElseThrow();
      assertEquals(Kind.LUA_ALLOC, a.kind());
      assertTrue(a.range()[0] <= realloc && realloc + 1 < a.range()[1],
          "the FDE's range holds the function: " + a.range()[0] + ".." + a.range()[1]);
      try (RandomAccessFile file = new RandomAccessFile(a.file().toFile(), "r");
          RandomAccessFile mem = new RandomAccessFile("/proc/self/mem", "r")) {
        byte[] inFile = new byte[16];
        byte[] running = new byte[16];
        file.seek(a.offset());
        file.readFully(inFile);
        mem.seek(a.address());
        mem.readFully(running);
        assertArrayEquals(inFile, running);
      }

      Mapping jit = self.mappings().stream().filter(m -> m.executable() && m.isAnonymous())
          .findFirst().orElseThrow(() -> new AssertionError("no JIT code in this JVM"));
      assertTrue(RuntimeAllocator.resolve(pid, self.mappings(), self.table(),
          new AllocatorSite(jit.start(), AllocatorSite.Convention.LUA_ALLOC, "lua_Alloc"))
          .isEmpty());
    }
  }
}
