package dev.polystack.host.sampling;

import dev.polystack.host.cache.BoundedMap;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;

/**
 * Which pages beyond the stack copy a runtime plug-in's walk of each thread reads, learned from
 * the walks themselves, so that the sampler can read them together with the stack while the
 * thread is stopped and walk after resuming it. A LuaJIT walk reads the same few heap pages
 * sample after sample (the global state, the lua_State, the Lua stack, function objects,
 * prototypes: 6 on bench/lua/cpu.lua), but it must not read them once the thread runs again,
 * since the Lua stack changes under it. A walk that needs a page the set lacks is discarded and
 * the thread's next sample walks while stopped, which teaches the set every page of that stack.
 * Pages not read for a while are forgotten; a thread whose walks need more than {@link
 * #MAX_PAGES} pages keeps walking while stopped.
 *
 * <p>A dropped sample is not a random one: it is taken where the set fails, in a phase whose
 * walks read other pages (a new coroutine's stack each round, a string.gsub callback between
 * long table.sort phases), so frequent misses bias the profile against those phases: on
 * coroutines.lua a third of the samples missed, and a callback taking 3-5% of the time went
 * unseen. A thread that misses more than {@link #MAX_MISSES} of its last 64 walks from the copy
 * is walked while stopped for {@link #STOPPED_SPELL} samples, then tried again. (Sampling again
 * at once instead of dropping is no cure: the retake is a random instant, so it replaces a
 * sample of the failing phase by one of the common phase; line 16 of coroutines.lua took 16-21%
 * instead of jit.p's 11-13%.)
 */
public final class PagePrefetch {
  /** Per thread: more would make the stopped read as costly as the stopped walk it replaces. */
  static final int MAX_PAGES = 64;
  /**
   * Samples of a thread after which a page its walks stopped reading is dropped: long enough to
   * keep both phases of a program that alternates every few milliseconds, short enough that the
   * stopped read stays small (measured in docs/benchmarks.md, "Figures behind the code's choices").
   */
  static final int FORGET_AFTER = 16;
  /**
   * Misses among a thread's last 64 walks from the copy beyond which the set is not predicting
   * its walks: more than 4 (over 6%); bench/lua/cpu.lua's 3% stays below it nearly always.
   */
  static final int MAX_MISSES = 4;
  /**
   * Samples for which a page is kept once a walk needed it again after the set had forgotten it.
   * Some pages are read by a few percent of the walks only (the function object of
   * {@code string.find}, a lua_State read when the leaf is in C): a fixed window forgot them
   * between two uses, and each use then dropped a sample. On bench/lua/lost.lua two such pages
   * made 16 of its 21 misses in 485 samples.
   */
  static final int KEEP_RETURNING = 128;
  /** Forgotten pages remembered per thread, to recognise one a walk needs again. */
  static final int FORGOTTEN_REMEMBERED = 256;
  /** Samples walked while stopped after too many misses, before the copy is tried again. */
  static final int STOPPED_SPELL = 256;
  /** Threads remembered; beyond it the least recently sampled one is forgotten. */
  static final int MAX_THREADS = 4096;

  private static final class ThreadPages {
    /** Page to the sample it was last used in (or, for a returning page, kept until). */
    final Map<Long, Long> lastUsed = new LinkedHashMap<>();
    final Map<Long, Boolean> forgotten = BoundedMap.oldestFirst(FORGOTTEN_REMEMBERED);
    long samples;
    boolean learnWhileStopped = true;
    boolean tooBig;
    /** One bit per walk from the copy, the latest lowest: set if it missed a page. */
    long misses;
    /** Walk while stopped until {@code samples} reaches this. */
    long stoppedUntil;
  }

  private final Map<Integer, ThreadPages> threads = BoundedMap.leastRecentlyUsed(MAX_THREADS);

  /** True if the thread's next walk should happen while it is stopped (to learn its pages). */
  public boolean walkStopped(int tid) {
    ThreadPages t = threads.get(tid);
    return t == null || t.learnWhileStopped || t.tooBig || t.samples < t.stoppedUntil;
  }

  /** The pages to read with the stack for the thread's next sample. */
  public long[] pages(int tid) {
    ThreadPages t = threads.get(tid);
    if (t == null) {
      return new long[0];
    }
    long[] out = new long[t.lastUsed.size()];
    int i = 0;
    for (long page : t.lastUsed.keySet()) {
      out[i++] = page;
    }
    return out;
  }

  /** After a walk of the stopped thread: every page it read becomes part of the set. */
  public void learned(int tid, Set<Long> pagesRead) {
    ThreadPages t = threads.computeIfAbsent(tid, k -> new ThreadPages());
    t.samples++;
    for (long page : pagesRead) {
      use(t, page);
    }
    t.tooBig = t.lastUsed.size() > MAX_PAGES;
    t.learnWhileStopped = false;
    forgetOld(t);
  }

  /**
   * After a walk from the snapshot: pages it read are kept fresh; if it missed any, they join
   * the set and the thread's next walk happens while stopped.
   */
  public void walked(int tid, Set<Long> pagesRead, Set<Long> missed) {
    ThreadPages t = threads.computeIfAbsent(tid, k -> new ThreadPages());
    t.samples++;
    for (long page : pagesRead) {
      if (t.lastUsed.containsKey(page)) {
        use(t, page);
      }
    }
    for (long page : missed) {
      use(t, page);
    }
    t.learnWhileStopped = !missed.isEmpty();
    t.misses = (t.misses << 1) | (missed.isEmpty() ? 0 : 1);
    if (Long.bitCount(t.misses) > MAX_MISSES) {
      t.stoppedUntil = t.samples + STOPPED_SPELL;
      t.misses = 0;
    }
    t.tooBig = t.lastUsed.size() > MAX_PAGES;
    forgetOld(t);
  }

  public void forget(int tid) {
    threads.remove(tid);
  }

  /** The page was used in the current sample; one the set had forgotten is kept for longer. */
  private static void use(ThreadPages t, long page) {
    long until = t.forgotten.remove(page) != null ? t.samples + KEEP_RETURNING : t.samples;
    t.lastUsed.merge(page, until, Math::max);
  }

  private static void forgetOld(ThreadPages t) {
    for (Iterator<Map.Entry<Long, Long>> it = t.lastUsed.entrySet().iterator(); it.hasNext(); ) {
      Map.Entry<Long, Long> e = it.next();
      if (t.samples - e.getValue() > FORGET_AFTER) {
        t.forgotten.put(e.getKey(), Boolean.TRUE);
        it.remove();
      }
    }
  }

  /** For tests: the pages currently expected for {@code tid}. */
  Map<Long, Long> snapshotOf(int tid) {
    ThreadPages t = threads.get(tid);
    return t == null ? Map.of() : new HashMap<>(t.lastUsed);
  }
}
