package dev.polystack.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The record summary names three rates (docs/operations.md, "The record summary"): requested,
 * on-CPU (samples per second of the target's CPU time) and wall (samples per wall second and
 * thread). A mostly sleeping target tells them apart: its on-CPU rate is about the requested
 * rate, its wall rate a fraction of it. The truth is the target's own CPU time from
 * getrusage(2), which it prints at exit.
 */
class SamplingRateTest {
  private static final int RATE = 99;
  /** 40 rounds of 20 ms of CPU and 80 ms of sleep: 0.8 s of CPU, ~79 ticks due at 99 Hz. */
  private static final int ROUNDS = 40;
  private static final int BURN_MS = 20;
  private static final int SLEEP_MS = 80;
  /**
   * Each mode makes 4 one-sided count assertions (2 modes: 8 tails in the class); chance fails
   * the class once in {@link SamplingNoise#RUNS} runs at most ({@link SamplingNoise#alpha}). A tick count of
   * CPU-clock events is modelled as Poisson in the CPU time, which overstates its spread (a
   * timer of fixed period in CPU time is off by at most one tick): the bounds are conservative.
   */
  private static final double ALPHA = SamplingNoise.alpha(8);
  private static final Pattern SUMMARY = Pattern.compile("(?m)^polystack: (\\d+) samples? from 1"
      + " thread; 99 Hz requested, ([\\d.]+) Hz on-CPU, ([\\d.]+) Hz wall per thread$");
  private static final Pattern CPU_NS = Pattern.compile("(?m)^cpu_ns (\\d+)$");

  @TempDir Path dir;

  @ParameterizedTest
  @ValueSource(strings = {"perf", "bpf"})
  void aSleepingTargetsOnCpuRateIsTheRequestedOneAndItsWallRateIsNot(String mode)
      throws Exception {
    Path html = dir.resolve(mode + ".html");
    Path stats = dir.resolve(mode + ".json");
    var result = Distribution.run("record", "--mode", mode, "--rate", Integer.toString(RATE),
        "--stats-json", stats.toString(), "-o", html.toString(), "--",
        Workloads.binary("mostly_sleeping").toString(), Integer.toString(ROUNDS),
        Integer.toString(BURN_MS), Integer.toString(SLEEP_MS));
    assertEquals(0, result.exitCode(), result.stderr());
    Matcher cpu = CPU_NS.matcher(result.stdout());
    assertTrue(cpu.find(), "the target prints its CPU time: " + result.stdout());
    double targetCpuSeconds = Long.parseLong(cpu.group(1)) / 1e9;
    Matcher line = SUMMARY.matcher(result.stderr());
    assertTrue(line.find(), "the summary names the three rates: " + result.stderr());
    long samples = Long.parseLong(line.group(1));
    double onCpuHz = Double.parseDouble(line.group(2));
    double wallHz = Double.parseDouble(line.group(3));

    // Every sample against the target's own count of its CPU time.
    double due = RATE * targetCpuSeconds;
    long low = SamplingNoise.poissonLower(due, ALPHA);
    long high = SamplingNoise.poissonUpper(due, ALPHA);
    System.out.printf("%s: %d samples in %.3f s of the target's CPU (%.1f due, %d..%d);"
        + " summary %.1f Hz on-CPU, %.1f Hz wall%n", mode, samples, targetCpuSeconds, due, low,
        high, onCpuHz, wallHz);
    assertTrue(samples >= low && samples <= high, samples + " samples where " + due
        + " ticks were due: outside " + low + ".." + high);

    // polystack's on-CPU figure: CPU time it read from /proc, never more than the target used,
    // and the samples taken meanwhile, as many as that time holds ticks.
    String json = Files.readString(stats);
    long cpuNs = field(json, "target_cpu_ns");
    long cpuSamples = field(json, "target_cpu_samples");
    assertTrue(cpuNs <= targetCpuSeconds * 1e9 + 1_000_000, cpuNs + " ns read, more than the "
        + targetCpuSeconds + " s the target used");
    assertTrue(cpuSamples <= samples, cpuSamples + " of " + samples);
    double dueRead = RATE * cpuNs / 1e9;
    assertTrue(cpuSamples >= SamplingNoise.poissonLower(dueRead, ALPHA)
        && cpuSamples <= SamplingNoise.poissonUpper(dueRead, ALPHA), cpuSamples
        + " samples in the " + cpuNs + " ns read, where " + dueRead + " ticks were due");
    assertEquals(cpuSamples / (cpuNs / 1e9), onCpuHz, 0.05, "on-CPU rate = samples / CPU s");

    // The run lasted at least the target's sleeps: the wall rate is below samples / that.
    double slept = ROUNDS * SLEEP_MS / 1000.0;
    assertTrue(wallHz <= samples / slept + 0.05, wallHz + " Hz wall with " + samples
        + " samples over more than " + slept + " s");

    // The flame graph's header names the same rates.
    String page = Files.readString(html);
    assertTrue(page.contains(String.format(java.util.Locale.ROOT,
        "<dd>99 Hz requested, %.1f Hz on-CPU, ", onCpuHz)), "html header");
  }

  private static long field(String json, String name) {
    Matcher m = Pattern.compile("\"" + name + "\": (\\d+)").matcher(json);
    assertTrue(m.find(), name + " in " + json);
    return Long.parseLong(m.group(1));
  }
}
