package dev.polystack.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A long record of a target with very many distinct stacks (a generated C program: hundreds of
 * functions calling each other along data-dependent paths (500^3..500^10 possible stacks;
 * compiled at -O1, as -O2 takes minutes on a loaded VM) of data-dependent depth) keeps the
 * polystack JVM's peak RSS (VmHWM) under a stated bound, while the per-frame caches (FrameNamer
 * 65536 entries, ElfUnwindModule 8192 rows per module, ModuleOpener 512 files) evict.
 *
 * <p>Properties: {@code -Dreliability.recordSeconds} (CI 15; the full run is 600),
 * {@code -Dreliability.maxRssMb} (the bound, default 700). Figures go to
 * e2e/target/reliability/bounds-distinct-stacks.txt.
 */
class ResourceBoundsTest {
  static final int FUNCTIONS = 500;

  @TempDir Path dir;

  @Test
  void peakMemoryStaysBoundedOverManyDistinctStacks() throws Exception {
    int seconds = Reliability.intProperty("reliability.recordSeconds", 15);
    int maxRssMb = Reliability.intProperty("reliability.maxRssMb", 700);
    Path binary = compile(generate(dir.resolve("manystacks.c")));
    Path out = dir.resolve("many.folded");
    long hwmKb = 0;
    long rssKb = 0;
    Distribution.Result result;
    try (Target target = Target.start(binary)) {
      target.awaitOutput("ready", 20_000);
      try (Distribution.Running polystack = Distribution.start("record", "--pid",
          Integer.toString(target.pid()), "--rate", "200", "--duration", seconds + "s",
          "--format", "folded", "-o", out.toString())) {
        while (polystack.process().isAlive()) {
          long h = ChurnTest.statusKb(polystack.pid(), "VmHWM:");
          hwmKb = Math.max(hwmKb, h);
          rssKb = Math.max(rssKb, ChurnTest.statusKb(polystack.pid(), "VmRSS:"));
          Thread.sleep(250);
        }
        result = polystack.await(seconds + 180L);
      }
      RecordLaunchTest.assertSucceeded(result, out);
      RecordAttachTest.assertReleasedAndRunning(target);
      target.stdin().close();
      assertEquals(0, target.awaitExit(30), target.output());
    }
    Map<String, Long> stacks = Tools.folded(out);
    long deepest = stacks.keySet().stream().mapToLong(s -> s.split(";").length).max().orElse(0);
    Reliability.report("bounds-distinct-stacks", String.format(
        "seconds=%d samples=%d distinct_stacks=%d deepest=%d vmhwm_mb=%d max_vmrss_mb=%d"
            + " bound_mb=%d output_mb=%.1f", seconds, Tools.total(stacks), stacks.size(),
        deepest, hwmKb / 1024, rssKb / 1024, maxRssMb, Files.size(out) / 1e6));
    // Most samples must be distinct stacks through the generated functions, or the test
    // measures nothing. Samples as taken: the folded counts also hold the periods of late ticks.
    long samples = RecordLaunchTest.samples(result);
    assertTrue(stacks.size() > samples / 2, stacks.size() + " distinct of " + samples);
    assertTrue(stacks.keySet().stream().anyMatch(s -> s.contains(";g_")), "no generated frames");
    assertTrue(hwmKb / 1024 < maxRssMb, "peak RSS " + hwmKb / 1024 + " MB >= " + maxRssMb);
  }

  /**
   * FUNCTIONS functions g_0..g_N: each mixes its argument and calls one of the others through
   * a table, chosen by the data, until a data-dependent depth (3..10) is reached; the leaf
   * burns a little CPU. Three threads do this forever until stdin reaches EOF.
   */
  static Path generate(Path source) throws Exception {
    StringBuilder c = new StringBuilder();
    c.append("#include <pthread.h>\n#include <stdint.h>\n#include <stdio.h>\n"
        + "#include <unistd.h>\n"
        + "typedef uint64_t (*fn)(uint64_t, int);\n"
        + "static volatile int stop_now;\nstatic volatile uint64_t sink;\n"
        + "extern fn table[" + FUNCTIONS + "];\n");
    for (int i = 0; i < FUNCTIONS; i++) {
      c.append("__attribute__((noinline)) uint64_t g_").append(i)
          .append("(uint64_t x, int d) {\n  x = x * 6364136223846793005ULL + ")
          .append(2 * i + 1).append("ULL;\n")
          .append("  if (d <= 0) { for (int i = 0; i < 300; i++) sink += x ^ i; return x; }\n")
          .append("  uint64_t r = table[(x >> 33) % ").append(FUNCTIONS)
          .append("](x, d - 1);\n  __asm__ volatile(\"\");\n  return r + 1;\n}\n");
    }
    c.append("fn table[").append(FUNCTIONS).append("] = {");
    for (int i = 0; i < FUNCTIONS; i++) {
      c.append(i % 16 == 0 ? "\n  " : " ").append("g_").append(i).append(',');
    }
    c.append("\n};\n"
        + "static void *worker(void *arg) {\n"
        + "  uint64_t x = (uint64_t)(uintptr_t)arg * 0x9e3779b97f4a7c15ULL;\n"
        + "  while (!stop_now) { x = x * 2862933555777941757ULL + 3037000493ULL;\n"
        + "    sink += table[(x >> 40) % " + FUNCTIONS + "](x, 3 + (int)((x >> 20) % 8)); }\n"
        + "  return NULL;\n}\n"
        + "int main(void) {\n  pthread_t t[3];\n"
        + "  for (int i = 0; i < 3; i++) pthread_create(&t[i], NULL, worker,"
        + " (void *)(uintptr_t)(i + 1));\n"
        + "  printf(\"ready\\n\"); fflush(stdout);\n"
        + "  char b[64]; while (read(0, b, sizeof b) > 0) {}\n"
        + "  stop_now = 1;\n  for (int i = 0; i < 3; i++) pthread_join(t[i], NULL);\n"
        + "  printf(\"done\\n\");\n  return 0;\n}\n");
    Files.writeString(source, c);
    return source;
  }

  private static Path compile(Path source) throws Exception {
    Path binary = source.resolveSibling("manystacks");
    List<String> command = new ArrayList<>(List.of("gcc"));
    command.addAll(List.of("-O1", "-fomit-frame-pointer", "-pthread"));
    command.addAll(List.of("-o", binary.toString(), source.toString()));
    Process gcc = new ProcessBuilder(command).redirectErrorStream(true)
        .redirectOutput(source.resolveSibling("gcc.log").toFile()).start();
    assertTrue(gcc.waitFor(300, TimeUnit.SECONDS), "gcc took more than 300 s");
    assertEquals(0, gcc.exitValue(), Files.readString(source.resolveSibling("gcc.log")));
    return binary;
  }
}
