package dev.polystack.host.process;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.polystack.host.memory.ProcessMemory;
import dev.polystack.host.modules.ModuleOpener;
import dev.polystack.host.plugins.PluginGuard;
import dev.polystack.host.plugins.PluginLoader;
import dev.polystack.host.proc.ProcFs;
import dev.polystack.plugin.api.ModuleSegment;
import dev.polystack.plugin.api.ModuleSymbol;
import dev.polystack.plugin.api.ProcessModule;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Module discovery (API 1.6): a plug-in finds the process's other modules, their program
 * headers, sections and thread-local symbols. Checked against a real process: the address of a
 * {@code __thread} variable the program prints is what a runtime plug-in would compute from the
 * executable's PT_TLS header, the symbol's offset and the thread pointer (x86-64, variant II:
 * the executable's block ends at the thread pointer).
 */
class ProcessModulesTest {
  private static final String SOURCE = """
      #include <pthread.h>
      #include <stdint.h>
      #include <stdio.h>
      #include <unistd.h>

      __thread uint64_t tls_marker = 0x5e1f7e57;
      __thread char tls_pad[40];

      int main(void) {
        tls_pad[0] = 1;
        printf("ready tp=%p var=%p\\n", (void *) pthread_self(), (void *) &tls_marker);
        fflush(stdout);
        sleep(60);
        return tls_pad[0] + (int) tls_marker;
      }
      """;

  @TempDir Path dir;

  @Test
  void aPluginFindsTheExecutablesThreadLocalBlockAndTheCLibrary() throws Exception {
    Path src = dir.resolve("tls.c");
    Files.writeString(src, SOURCE);
    Path binary = dir.resolve("tls");
    Process gcc = new ProcessBuilder("gcc", "-O1", "-g", "-o", binary.toString(),
        src.toString()).inheritIO().start();
    assertEquals(0, gcc.waitFor(), "gcc");
    Path out = dir.resolve("out");
    // ProcessBuilder is fine here: the program is only described, never sampled.
    Process p = new ProcessBuilder(binary.toString()).redirectOutput(out.toFile()).start();
    List<String> warnings = new ArrayList<>();
    try {
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
      while (!Files.readString(out).contains("ready")) {
        assertTrue(System.nanoTime() < deadline, "the program never got ready");
        Thread.sleep(5);
      }
      String line = Files.readString(out).strip();
      long tp = Long.parseUnsignedLong(line.replaceAll(".*tp=0x([0-9a-f]+).*", "$1"), 16);
      long var = Long.parseUnsignedLong(line.replaceAll(".*var=0x([0-9a-f]+).*", "$1"), 16);
      int pid = (int) p.pid();
      try (TargetProcess target = new TargetProcess(pid, ProcFs.system(), new ModuleOpener(),
          ProcessMemory.of(pid), new PluginLoader().load(List.of()),
          new PluginGuard(warnings::add), warnings::add)) {
        target.refresh();
        List<ProcessModule> modules = target.modules();
        String exePath = binary.toRealPath().toString();
        ProcessModule exe = modules.stream()
            .filter(m -> m.path().equals(exePath)).findFirst()
            .orElseThrow(() -> new AssertionError("no executable among " + modules));
        assertTrue(modules.stream().anyMatch(m -> m.fileName().equals("libc.so.6")),
            modules.toString());
        for (int i = 1; i < modules.size(); i++) {
          assertTrue(Long.compareUnsigned(modules.get(i - 1).start(), modules.get(i).start()) < 0,
              "address order");
        }

        ModuleSegment tls = exe.image().segments().stream()
            .filter(s -> s.type() == ModuleSegment.PT_TLS).findFirst().orElseThrow();
        ModuleSymbol marker = exe.image().threadLocalSymbol("tls_marker").orElseThrow();
        long block = (tls.memorySize() + tls.alignment() - 1) & -tls.alignment();
        assertEquals(var, tp - block + marker.value(), "tp - aligned PT_TLS size + offset");
        assertEquals(Optional.empty(), exe.image().threadLocalSymbol("main"), "not thread-local");
        assertTrue(exe.image().section(".tdata").isPresent());
        long main = exe.loadBias() + exe.image().symbol("main").orElseThrow().value();
        assertTrue(Long.compareUnsigned(main - exe.start(), exe.end() - exe.start()) < 0,
            "main at its module virtual address plus the load bias lies in the module");

        ProcessModule libc = modules.stream().filter(m -> m.fileName().equals("libc.so.6"))
            .findFirst().orElseThrow();
        assertTrue(libc.image().segments().stream()
            .anyMatch(s -> s.type() == ModuleSegment.PT_TLS), "libc has a TLS block");
        assertTrue(libc.image().threadLocalSymbol("errno").isPresent(), "errno is thread-local");
      }
      assertEquals(List.of(), warnings);
    } finally {
      p.destroy();
      p.waitFor(5, TimeUnit.SECONDS);
    }
  }
}
