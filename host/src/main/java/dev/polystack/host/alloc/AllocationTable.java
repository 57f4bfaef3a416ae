package dev.polystack.host.alloc;

import dev.polystack.host.bpf.AllocRecord;
import dev.polystack.otel.counters.HostCounters;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;

/**
 * The sampled allocations of one process by stack: each stack's unbiased allocated objects and
 * bytes and, from the frees of sampled blocks, what is still in use. Stacks arrive once per
 * digest (definitions) ahead of the records that name them; a definition without a digest
 * belongs to its thread's next record. Bounded: past {@link #MAX_STACKS} stacks or
 * {@link #MAX_LIVE} live blocks, samples are counted as lost, never kept.
 *
 * @param <S> the stack as the walker made it
 */
public final class AllocationTable<S> {
  public static final int MAX_STACKS = 65536;
  public static final int MAX_LIVE = 1 << 20;
  /** Allocations whose definition never arrived are kept under this stack (null). */
  private static final Object LOST = new Object();

  /** One stack's totals, in the order of ValueType.ALLOCATIONS. */
  public static final class Totals {
    private final double[] values = new double[4];

    public double allocObjects() {
      return values[0];
    }

    public double allocSpace() {
      return values[1];
    }

    public double inuseObjects() {
      return values[2];
    }

    public double inuseSpace() {
      return values[3];
    }

    /** The four values rounded, as a sample carries them. */
    public long[] rounded() {
      long[] out = new long[4];
      for (int i = 0; i < 4; i++) {
        out[i] = Math.round(Math.max(0, values[i]));
      }
      return out;
    }
  }

  /** One stack (null: the allocation's stack was lost) and its totals. */
  public record Entry<S>(S stack, Totals totals, int tid) {}

  private record Live(Object key, double weight, long bytes) {}

  private final long mean;
  private final Consumer<String> lost;
  private final Map<Long, S> byDigest = new HashMap<>();
  private final Map<Integer, S> undigested = new HashMap<>();
  private final Map<Object, Entry<S>> entries = new LinkedHashMap<>();
  private final Map<Long, Live> live = new HashMap<>();

  /**
   * @param mean the sampling's mean bytes (0: every call)
   * @param lost counts a loss by its counter name
   */
  public AllocationTable(long mean, Consumer<String> lost) {
    this.mean = mean;
    this.lost = lost;
  }

  /** A stack definition: {@code digest} 0 is the thread's next record's stack. */
  public void define(long digest, int tid, S stack) {
    if (digest == 0) {
      undigested.put(tid, stack);
    } else if (byDigest.size() < MAX_STACKS || byDigest.containsKey(digest)) {
      byDigest.put(digest, stack);
    }
  }

  /** A sampled allocation or the free of a sampled block. */
  public void accept(AllocRecord r) {
    if (!r.allocation()) {
      Live l = live.remove(r.address());
      if (l != null) {
        Entry<S> e = entries.get(l.key());
        if (e != null) {
          e.totals().values[2] -= l.weight();
          e.totals().values[3] -= l.weight() * l.bytes();
        }
      }
      return;
    }
    S stack;
    Object key;
    if (r.digest() == 0) {
      stack = undigested.remove(r.tid());
      key = stack;
    } else {
      stack = byDigest.get(r.digest());
      key = r.digest();
    }
    if (stack == null) {
      lost.accept(HostCounters.ALLOC_DIGEST_UNKNOWN.name());
      key = LOST;
    }
    Entry<S> e = entries.get(key);
    if (e == null) {
      if (entries.size() >= MAX_STACKS) {
        lost.accept(HostCounters.ALLOC_STACK_TABLE_FULL.name());
        return;
      }
      e = new Entry<>(stack, new Totals(), r.tid());
      entries.put(key, e);
    }
    double w = ByteSampling.weight(r.bytes(), mean);
    double[] v = e.totals().values;
    v[0] += w;
    v[1] += w * r.bytes();
    if (r.noAddress()) {
      return; // the kernel did not track it: allocated, never counted as in use
    }
    if (live.size() >= MAX_LIVE && !live.containsKey(r.address())) {
      lost.accept(HostCounters.ALLOC_LIVE_TABLE_FULL.name());
      return;
    }
    v[2] += w;
    v[3] += w * r.bytes();
    Live before = live.put(r.address(), new Live(key, w, r.bytes()));
    if (before != null) {
      // The free of the earlier block at this address was not seen: it is no longer in use.
      Entry<S> old = entries.get(before.key());
      if (old != null) {
        old.totals().values[2] -= before.weight();
        old.totals().values[3] -= before.weight() * before.bytes();
      }
    }
  }

  /** Every stack with its totals, in first-seen order. */
  public List<Entry<S>> entries() {
    return new ArrayList<>(entries.values());
  }

  /** Sampled blocks not freed yet. */
  public int liveBlocks() {
    return live.size();
  }
}
