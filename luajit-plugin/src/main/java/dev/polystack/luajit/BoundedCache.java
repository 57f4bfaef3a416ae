package dev.polystack.luajit;

import java.util.LinkedHashMap;
import java.util.Map;

/** A least-recently-used map with a fixed capacity, for per-process symbol caches. */
final class BoundedCache<K, V> extends LinkedHashMap<K, V> {
  private static final long serialVersionUID = 1L;

  private final int capacity;

  BoundedCache(int capacity) {
    super(256, 0.75f, true);
    this.capacity = capacity;
  }

  @Override
  protected boolean removeEldestEntry(Map.Entry<K, V> eldest) {
    return size() > capacity;
  }
}
