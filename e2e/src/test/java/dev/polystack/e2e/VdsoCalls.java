package dev.polystack.e2e;

import java.util.ArrayList;
import java.util.List;

/** What the vdso_calls workload says it did: its "CALLS pid tid ok failed" lines. */
final class VdsoCalls {
  /** One thread's calls, as counted by the workload itself. */
  record Line(int pid, int tid, int ok, int failed) {}

  private VdsoCalls() {}

  static List<Line> parse(String output) {
    List<Line> out = new ArrayList<>();
    for (String line : output.lines().toList()) {
      if (line.startsWith("CALLS ")) {
        String[] f = line.split(" ");
        out.add(new Line(Integer.parseInt(f[1]), Integer.parseInt(f[2]),
            Integer.parseInt(f[3]), Integer.parseInt(f[4])));
      }
    }
    if (out.isEmpty()) {
      throw new AssertionError("the workload reported no calls: " + output);
    }
    return out;
  }

  /** The pid the workload printed after "CHILD ", or -1. */
  static int child(String output) {
    return output.lines().filter(l -> l.startsWith("CHILD ")).findFirst()
        .map(l -> Integer.parseInt(l.substring(6).trim())).orElse(-1);
  }
}
