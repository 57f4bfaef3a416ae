package dev.polystack.host.sampling.nostop;

import dev.polystack.host.sampling.SampleMemory;
import dev.polystack.plugin.api.CapturePlan;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The pages a process's walks keep reading outside what the capture copied (for LuaJIT: the
 * closures of the frames; for a plug-in without a plan: everything it reads), turned into a
 * plan that copies them at the tick too. A hot loop's objects stay put, so after a few samples
 * they are read at the tick with the rest, and the walk no longer reaches into memory that may
 * have changed (a closure freed and reused) since. Pages come and go as the program moves on.
 */
final class LearnedPages {
  /** Pages copied per tick: with the stack and a runtime's plan they fit one 64 KiB record. */
  static final int MAX_PAGES = 6;
  /** A page is copied once at least this share of the recent samples needed it. */
  static final int MIN_SHARE_DIVISOR = 32;
  /** Counts halve every this many samples, so a page the program left behind is dropped. */
  static final int WINDOW = 256;
  /** Distinct pages remembered; beyond that the least needed are forgotten. */
  static final int MAX_TRACKED = 4096;

  private final Map<Long, Integer> hits = new HashMap<>();
  private int samples;
  /** The last plan and its pages: asked for at every housekeeping, it seldom changes. */
  private List<Long> planned = List.of();
  private CapturePlan plan = CapturePlan.NONE;
  private boolean changed;

  /** One sample's walk needed these pages beyond the capture. */
  void walked(Iterable<Long> pages) {
    samples++;
    changed = true;
    for (long page : pages) {
      hits.merge(page, 2, Integer::sum); // counts are halved later; 2 keeps a single use > 0
    }
    if (samples >= WINDOW || hits.size() > MAX_TRACKED) {
      decay();
    }
  }

  /** The plan that copies the pages most walks need, or none while no page qualifies. */
  CapturePlan plan() {
    if (!changed) {
      return plan;
    }
    changed = false;
    int threshold = Math.max(2, 2 * samples / MIN_SHARE_DIVISOR);
    List<Map.Entry<Long, Integer>> ranked = new ArrayList<>();
    for (Map.Entry<Long, Integer> e : hits.entrySet()) {
      if (e.getValue() >= threshold) {
        ranked.add(e);
      }
    }
    if (ranked.isEmpty()) {
      planned = List.of();
      plan = CapturePlan.NONE;
      return plan;
    }
    ranked.sort(Map.Entry.<Long, Integer>comparingByValue().reversed()
        .thenComparing(Map.Entry.comparingByKey()));
    List<Long> pages = new ArrayList<>();
    for (int i = 0; i < Math.min(MAX_PAGES, ranked.size()); i++) {
      pages.add(ranked.get(i).getKey());
    }
    pages.sort(null); // the same set gives the same plan, whatever the counts
    if (pages.equals(planned)) {
      return plan; // the same instance: the host compares it with the installed one by identity
    }
    CapturePlan.Builder b = CapturePlan.builder();
    for (long page : pages) {
      b.constant("page", page).copy("page", 0, SampleMemory.PAGE, "learned_page");
    }
    planned = List.copyOf(pages);
    plan = b.build();
    return plan;
  }

  /** Distinct pages remembered now (at most MAX_TRACKED plus one walk's). */
  int tracked() {
    return hits.size();
  }

  private void decay() {
    samples /= 2;
    hits.replaceAll((page, n) -> n / 2);
    hits.values().removeIf(n -> n == 0);
    if (hits.size() > MAX_TRACKED) {
      hits.clear(); // a program that touches this many pages has no hot set to learn
    }
  }
}
