package dev.polystack.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@code record --event alloc} on LuaJIT, upstream and OpenResty builds: the VM's own
 * allocations (through G->allocf, which never reaches malloc) are probed and carry the Lua
 * stack. lua-alloc/alloc_shares.lua allocates exactly 3/4 of its bytes under the Lua function
 * {@code big} and 1/4 under {@code small}, each as interned strings and grown tables: at the
 * default rate the byte shares by function are within 3 points, the frames carry the
 * functions' names and lines, and both the string's line and the table's line get bytes.
 */
class LuaJitAllocationTest {
  static final String SCRIPT = "alloc_shares.lua";
  /**
   * Rounds of the script (20 and 60 units a round): about 4 GB allocated, some 7,000 samples at
   * 512 KiB, so that chance stays well inside the bound (about 0.5 points of standard deviation).
   */
  static final int ROUNDS = 500;
  static final long RATE = 512 * 1024;
  /** Largest single allocation of the script (a 32 KiB string or a table's 32 KiB array). */
  static final long LARGEST = 33 * 1024;
  /** Statistical assertions of this class: one share per build. */
  static final int ASSERTIONS = 2;
  /**
   * This class's chance of failing a run: a tenth of a {@link SamplingNoise} class's, which the
   * suite's budget has room for (docs/testing.md, "Bounds and their false-failure rates").
   */
  static final double CLASS_ALPHA = 1 / (SamplingNoise.RUNS * 10);

  private static final Pattern SAMPLE = Pattern.compile(
      "^\\s*(\\d+)\\s+(\\d+)\\s+(\\d+)\\s+(\\d+): ([\\d ]+)$");
  /** A Lua frame's location in {@code go tool pprof -raw}: id, function, file and line. */
  private static final Pattern LOCATION =
      Pattern.compile("^\\s*(\\d+): 0x\\p{XDigit}+ (?:M=\\d+ )?(.+?) (\\S*):(\\d+):\\d+ s=");

  @TempDir Path dir;

  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"upstream", "openresty"})
  void byteSharesOfTwoLuaFunctionsAreWithinThreePoints(String buildName) throws Exception {
    LuaJitBuild build = buildName.equals("upstream") ? LuaJitBuild.upstream()
        : LuaJitBuild.openResty();
    Path script = dir.resolve(SCRIPT);
    try (InputStream in = getClass().getResourceAsStream("/lua-alloc/" + SCRIPT)) {
      Files.copy(in, script);
    }
    List<String> lines = Files.readAllLines(script);
    int bigString = lineOf(lines, "local function big", "-- a string interned");
    int bigTable = lineOf(lines, "local function big", "-- a table grown");

    ProcessBuilder pb = new ProcessBuilder(build.command(script.toString(),
        Integer.toString(ROUNDS))).redirectError(ProcessBuilder.Redirect.INHERIT);
    pb.environment().putAll(build.env());
    Process lua = pb.start();
    Path out = dir.resolve("alloc.pb.gz");
    Distribution.Result result;
    try {
      BufferedReader stdout = new BufferedReader(
          new InputStreamReader(lua.getInputStream(), StandardCharsets.UTF_8));
      assertEquals("ready", stdout.readLine());
      try (Distribution.Running polystack = Distribution.start("record", "--event", "alloc",
          "--pid", Long.toString(lua.pid()), "-o", out.toString())) {
        // The C library's link and the Lua allocator's: the VM's allocations are probed.
        Awaits.until("polystack's two uprobe_multi links", 60_000,
            () -> AllocationProfileTest.ownLinks(polystack.process().pid()).size() >= 2);
        try (OutputStream stdin = lua.getOutputStream()) {
          stdin.write("go\n".getBytes(StandardCharsets.US_ASCII));
        }
        assertEquals("done", stdout.readLine());
        assertTrue(lua.waitFor(300, TimeUnit.SECONDS), "the Lua program did not finish");
        assertEquals(0, lua.exitValue());
        result = polystack.await(120);
      }
    } finally {
      lua.destroyForcibly();
    }
    assertEquals(0, result.exitCode(), result.stderr());

    var raw = Tools.run(300, null, List.of(Tools.go(), "tool", "pprof", "-raw", out.toString()));
    assertEquals(0, raw.exitCode(), raw.stderr());
    Map<String, Long> bytes = bytesByFrame(raw.stdout());
    long big = bytes.getOrDefault("big", 0L);
    long small = bytes.getOrDefault("small", 0L);
    double share = big / (double) (big + small);
    // Each sample stands for at most RATE + LARGEST bytes, so there are at least this many.
    long samples = (big + small) / (RATE + LARGEST);
    double alpha = CLASS_ALPHA / ASSERTIONS / 2; // two-sided
    double low = SamplingNoise.binomialLower(samples, 0.75, alpha) / (double) samples;
    double high = SamplingNoise.binomialUpper(samples, 0.75, alpha) / (double) samples;
    String figures = String.format("%s: big %d bytes, small %d bytes, share %.4f (truth 0.75;"
        + " >= %d samples, chance bounds %.4f..%.4f); big's string line %d bytes, table line"
        + " %d bytes", buildName, big, small, share, samples, low, high,
        bytes.getOrDefault("big:" + bigString, 0L), bytes.getOrDefault("big:" + bigTable, 0L));
    System.out.println("luajit alloc shares at 512 KiB: " + figures);
    assertTrue(low >= 0.72 && high <= 0.78,
        "too few samples for chance to stay within 3 points: " + figures);
    assertTrue(Math.abs(share - 0.75) <= 0.03, figures);
    // The string and the table each carry a good part of big's bytes, on their own lines
    // (a unit's string is 32 KB, its table's arrays about twice that).
    assertTrue(bytes.getOrDefault("big:" + bigString, 0L) >= big / 10, figures);
    assertTrue(bytes.getOrDefault("big:" + bigTable, 0L) >= big / 5, figures);
  }

  /** The 1-based line, after the line starting {@code after}, that contains {@code marker}. */
  private static int lineOf(List<String> lines, String after, String marker) {
    int from = -1;
    for (int i = 0; i < lines.size(); i++) {
      if (from < 0 && lines.get(i).startsWith(after)) {
        from = i;
      } else if (from >= 0 && lines.get(i).contains(marker)) {
        return i + 1;
      }
    }
    throw new IllegalStateException(marker + " not found after " + after);
  }

  /**
   * alloc_space by Lua function name and by "name:line", each sample counted once per name
   * and once per name:line its stack holds.
   */
  static Map<String, Long> bytesByFrame(String raw) {
    Map<String, String[]> locations = new HashMap<>();
    for (String line : raw.split("\n")) {
      Matcher m = LOCATION.matcher(line);
      if (m.find()) {
        locations.put(m.group(1), new String[] {m.group(2), m.group(4)});
      }
    }
    Map<String, Long> out = new HashMap<>();
    for (String line : raw.split("\n")) {
      Matcher m = SAMPLE.matcher(line);
      if (!m.matches()) {
        continue;
      }
      java.util.Set<String> keys = new java.util.HashSet<>();
      for (String id : m.group(5).trim().split(" +")) {
        String[] l = locations.get(id);
        if (l != null) {
          keys.add(l[0]);
          keys.add(l[0] + ":" + l[1]);
        }
      }
      for (String k : keys) {
        out.merge(k, Long.parseLong(m.group(2)), Long::sum);
      }
    }
    return out;
  }
}
