package dev.polystack.host.cli;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Loss reasons in the words of someone reading a profile: why samples are missing, grouped by
 * what they can do about it. The exact reasons stay in {@code --stats-json} and {@code -v}.
 */
final class LossGroups {
  private LossGroups() {}

  /** Group, in the order printed, with the reasons it gathers (docs/operations.md lists them). */
  private static final Map<String, List<String>> GROUPS = groups();

  private static Map<String, List<String>> groups() {
    Map<String, List<String>> g = new LinkedHashMap<>();
    g.put("while polystack was busy", List.of("late_tick", "queue_full", "bpf_ring_full",
        "ring_lost", "throttled"));
    g.put("threads gone", List.of("thread_gone"));
    g.put("while learning a thread's stack", List.of("learning_walk", "read_after_resume"));
    g.put("stack unreadable", List.of("stack_copy_failed", "walk_page_missed", "no_user_regs",
        "malformed_record", "capture_plan_refused", "raced_event", "stop_timeout"));
    g.put("polystack could not sample", List.of("perf_open_failed", "refresh_failed",
        "detach_failed", "export_hook_failed"));
    return g;
  }

  /**
   * The counters that are missing samples. A plug-in's own counters ({@code plugin.reason}) are
   * notes on how it read the target, not samples missing, so they stay out.
   */
  static Map<String, Long> samplesLost(Map<String, Long> losses) {
    Map<String, Long> out = new LinkedHashMap<>();
    losses.forEach((k, v) -> {
      if (!k.contains(".") && v > 0) {
        out.put(k, v);
      }
    });
    return out;
  }

  /** {@code lost 12 samples: 10 while polystack was busy, 2 threads gone}. */
  static String describe(Map<String, Long> lost) {
    long total = 0;
    Map<String, Long> byGroup = new LinkedHashMap<>();
    GROUPS.keySet().forEach(g -> byGroup.put(g, 0L));
    for (Map.Entry<String, Long> e : lost.entrySet()) {
      total += e.getValue();
      byGroup.merge(group(e.getKey()), e.getValue(), Long::sum);
    }
    List<String> parts = new ArrayList<>();
    byGroup.forEach((g, n) -> {
      if (n > 0) {
        parts.add(n + " " + g);
      }
    });
    return "lost " + Summaries.plural(total, "sample") + ": " + String.join(", ", parts);
  }

  static String group(String reason) {
    for (Map.Entry<String, List<String>> e : GROUPS.entrySet()) {
      if (e.getValue().contains(reason)) {
        return e.getKey();
      }
    }
    return "for other reasons";
  }
}
