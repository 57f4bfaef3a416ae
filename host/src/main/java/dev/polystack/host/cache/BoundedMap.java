package dev.polystack.host.cache;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * A map that holds at most a given number of entries and drops one when a put goes past it: the
 * least recently used, or the oldest put. Every cache of the host is one, so that none grows with
 * what it sees. Not thread-safe, like {@link LinkedHashMap}.
 */
public final class BoundedMap<K, V> extends LinkedHashMap<K, V> {
  private static final long serialVersionUID = 1L;

  private final int capacity;

  private BoundedMap(int capacity, boolean accessOrder) {
    super(Math.min(capacity, 64), 0.75f, accessOrder);
    if (capacity < 1) {
      throw new IllegalArgumentException("capacity must be positive: " + capacity);
    }
    this.capacity = capacity;
  }

  /** Drops the entry read or written least recently; a get counts as a use. */
  public static <K, V> BoundedMap<K, V> leastRecentlyUsed(int capacity) {
    return new BoundedMap<>(capacity, true);
  }

  /** Drops the entry put first; reads do not reorder. */
  public static <K, V> BoundedMap<K, V> oldestFirst(int capacity) {
    return new BoundedMap<>(capacity, false);
  }

  public int capacity() {
    return capacity;
  }

  @Override
  protected boolean removeEldestEntry(Map.Entry<K, V> eldest) {
    return size() > capacity;
  }
}
