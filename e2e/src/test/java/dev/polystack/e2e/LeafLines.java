package dev.polystack.e2e;

import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Where samples spent their time, by the leaf-most Lua frame's {@code file:line}, with file
 * reduced to its base name so that polystack's chunk names and jit.p's keys compare.
 */
final class LeafLines {
  /** A Lua frame in folded output: {@code NAME (CHUNK:LINE)}. Builtins have no parentheses. */
  static final Pattern LUA_FRAME = Pattern.compile("^(.*) \\((.+):(\\d+)\\)$");
  /** A jit.p key for a Lua frame; builtins ("pcall") and C functions ("@0x...") have no line. */
  private static final Pattern JITP_LINE = Pattern.compile("^\\s*(\\d+)\\s+(.+):(\\d+)\\s*$");
  private static final Pattern JITP_OTHER = Pattern.compile("^\\s*(\\d+)\\s+(.+)$");

  final Map<String, Long> counts = new TreeMap<>();
  /** Samples with no Lua frame at all (jit.p: builtin or C leaf keys). */
  long withoutLua;
  /** Samples taken while the script runs (see {@link #fromFolded}); jit.p: all of them. */
  long whileLuaRuns;
  /** Of those, the ones that carry at least one Lua frame. */
  long whileLuaRunsWithLua;

  private LeafLines() {}

  /**
   * From polystack's folded output. "While Lua code runs" means: every sample except those
   * whose native stack is fully unwound to {@code _start} without passing the interpreter entry
   * ({@code lua_pcall}/{@code lua_call}, which luajit's main uses to run the script): those are
   * provably startup (library setup, parsing the file) or teardown (lua_close). A sample that
   * cannot be unwound that far (an error frame, a JIT trace we did not recognise) stays in, so
   * a walk failure counts against us instead of hiding.
   */
  static LeafLines fromFolded(String folded) {
    LeafLines d = new LeafLines();
    for (String row : folded.lines().filter(l -> !l.isBlank()).toList()) {
      int space = row.lastIndexOf(' ');
      long n = Long.parseLong(row.substring(space + 1));
      List<String> frames = List.of(row.substring(0, space).split(";"));
      String leafKey = null;
      for (int i = frames.size() - 1; i >= 0 && leafKey == null; i--) {
        Matcher m = LUA_FRAME.matcher(frames.get(i));
        if (m.matches()) {
          leafKey = baseName(m.group(2)) + ":" + m.group(3);
        }
      }
      boolean entry = frames.contains("lua_pcall") || frames.contains("lua_call");
      boolean provablyOutside = !entry && leafKey == null && frames.get(0).equals("_start");
      if (!provablyOutside) {
        d.whileLuaRuns += n;
        if (leafKey != null) {
          d.whileLuaRunsWithLua += n;
        }
      }
      if (leafKey == null) {
        d.withoutLua += n;
      } else {
        d.counts.merge(leafKey, n, Long::sum);
      }
    }
    return d;
  }

  /** From {@code luajit -jp=lrm0}: one line per key, raw count first. */
  static LeafLines fromJitP(String report) {
    LeafLines d = new LeafLines();
    for (String row : report.lines().filter(l -> !l.isBlank()).toList()) {
      Matcher m = JITP_LINE.matcher(row);
      Matcher other = JITP_OTHER.matcher(row);
      if (m.matches()) {
        long n = Long.parseLong(m.group(1));
        d.counts.merge(baseName(m.group(2)) + ":" + m.group(3), n, Long::sum);
        d.whileLuaRuns += n;
        d.whileLuaRunsWithLua += n;
      } else if (other.matches()) {
        long n = Long.parseLong(other.group(1));
        d.withoutLua += n;
        d.whileLuaRuns += n;
      }
    }
    return d;
  }

  long luaSamples() {
    return counts.values().stream().mapToLong(Long::longValue).sum();
  }

  double luaFrameShare() {
    return whileLuaRuns == 0 ? 0 : (double) whileLuaRunsWithLua / whileLuaRuns;
  }

  double share(String key) {
    long total = luaSamples();
    return total == 0 ? 0 : counts.getOrDefault(key, 0L) / (double) total;
  }

  /** Every key's share of the Lua samples. */
  Map<String, Double> shares() {
    Map<String, Double> shares = new TreeMap<>();
    counts.keySet().forEach(k -> shares.put(k, share(k)));
    return shares;
  }

  /** Sum over keys of the smaller share: 1 for identical distributions, 0 for disjoint ones. */
  double overlap(LeafLines other) {
    var keys = new java.util.TreeSet<>(counts.keySet());
    keys.addAll(other.counts.keySet());
    double sum = 0;
    for (String k : keys) {
      sum += Math.min(share(k), other.share(k));
    }
    return sum;
  }

  /** The largest keys with their shares, for failure messages. */
  String top(int n) {
    StringBuilder sb = new StringBuilder();
    counts.entrySet().stream().sorted((a, b) -> Long.compare(b.getValue(), a.getValue())).limit(n)
        .forEach(e -> sb.append(String.format(" %s=%.3f", e.getKey(), share(e.getKey()))));
    return sb.append(" (").append(luaSamples()).append(" Lua samples, ").append(withoutLua)
        .append(" without)").toString();
  }

  private static String baseName(String chunk) {
    int slash = chunk.lastIndexOf('/');
    return slash < 0 ? chunk : chunk.substring(slash + 1);
  }
}
