package dev.polystack.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code record --event calls --site SITE}: the stacks at the calls of a function, taken in the
 * kernel at a uprobe. call_paths.c calls counted_leaf() N times, 3/4 through path_big and 1/4
 * through path_small: with every call sampled the counts are exact, sampled one per 50 calls
 * the shares are within 3 points and the total is the calls' to within chance; pprof names the
 * sample type calls; bad sites are refused in one line with exit 2.
 */
class CallStacksTest {
  private static final long CALLS = 200_000;

  @TempDir Path dir;

  @Test
  void everyCallIsCountedUnderItsCaller() throws Exception {
    Path out = dir.resolve("calls.folded");
    var r = Distribution.run("record", "--event", "calls", "--site", "call_paths:counted_leaf",
        "-o", out.toString(), "--", Workloads.binary("call_paths").toString(),
        Long.toString(CALLS));
    assertEquals(0, r.exitCode(), r.stderr());
    assertTrue(r.stderr().contains(CALLS + " calls sampled of " + CALLS + " probed calls (every"
        + " call)"), r.stderr());
    Map<String, Long> byPath = byCaller(Tools.folded(out));
    assertEquals(Map.of("path_big", CALLS * 3 / 4, "path_small", CALLS / 4), byPath,
        () -> "stacks: " + out);
  }

  @Test
  void sampledCallsKeepTheCallersShares() throws Exception {
    Path out = dir.resolve("calls.folded");
    var r = Distribution.run("record", "--event", "calls", "--site", "call_paths:counted_leaf",
        "--stack-every", "50", "-o", out.toString(), "--",
        Workloads.binary("call_paths").toString(), Long.toString(CALLS));
    assertEquals(0, r.exitCode(), r.stderr());
    assertTrue(r.stderr().contains("of " + CALLS + " probed calls (one per 50 calls on"
        + " average)"), r.stderr());
    Map<String, Long> byPath = byCaller(Tools.folded(out));
    long total = byPath.values().stream().mapToLong(Long::longValue).sum();
    // About 4,000 samples: the total's standard deviation is 1.6%, the share's 0.7 points.
    assertTrue(Math.abs(total - CALLS) < CALLS * 0.08, "estimated calls " + total);
    double big = byPath.getOrDefault("path_big", 0L) / (double) total;
    assertTrue(Math.abs(big - 0.75) < 0.03, "path_big's share " + big + " of " + byPath);
  }

  @Test
  void pprofNamesTheCalls() throws Exception {
    Path out = dir.resolve("calls.pb.gz");
    var r = Distribution.run("record", "--event", "calls", "--site", "call_paths:counted_leaf",
        "-o", out.toString(), "--", Workloads.binary("call_paths").toString(), "1000");
    assertEquals(0, r.exitCode(), r.stderr());
    var top = Tools.run(60, null, List.of(Tools.go(), "tool", "pprof", "-top", "-nodecount=5",
        out.toString()));
    assertEquals(0, top.exitCode(), top.stderr());
    assertTrue(top.stdout().contains("Type: calls"), top.stdout());
    assertTrue(top.stdout().matches("(?s).*1000 +100% +100% +1000 +100% +counted_leaf.*"),
        top.stdout());
  }

  @Test
  void badSitesAreRefusedInOneLine() throws Exception {
    String binary = Workloads.binary("call_paths").toString();
    Map<List<String>, String> cases = Map.of(
        List.of("--event", "calls"), "--event calls needs a function to sample",
        List.of("--site", "libc.so.6:write"), "--site is for --event calls",
        List.of("--event", "calls", "--site", "call_paths:counted_leaf%return"),
        "no %return",
        List.of("--event", "calls", "--site", "call_paths:no_such_function"),
        "no_such_function",
        List.of("--event", "calls", "--site", "call_paths:counted_leaf", "--stack-every", "0"),
        "--stack-every must be >= 1");
    for (var c : cases.entrySet()) {
      List<String> args = new java.util.ArrayList<>(List.of("record"));
      args.addAll(c.getKey());
      args.addAll(List.of("-o", dir.resolve("x.folded").toString(), "--", binary, "10"));
      var r = Distribution.run(args.toArray(String[]::new));
      assertEquals(2, r.exitCode(), () -> c.getKey() + ": " + r.stderr());
      assertEquals(1, r.stderrLines().size(), () -> c.getKey() + ": " + r.stderr());
      assertTrue(r.stderr().contains(c.getValue()), () -> c.getKey() + ": " + r.stderr());
      assertTrue(!Files.exists(dir.resolve("x.folded")), "a refused run wrote its file");
    }
  }

  /** Calls by the function that called counted_leaf. */
  private static Map<String, Long> byCaller(Map<String, Long> folded) {
    Map<String, Long> out = new java.util.TreeMap<>();
    folded.forEach((stack, n) -> {
      List<String> frames = Tools.frames(stack);
      assertEquals("counted_leaf", frames.get(frames.size() - 1), stack);
      out.merge(frames.get(frames.size() - 2), n, Long::sum);
    });
    return out;
  }
}
