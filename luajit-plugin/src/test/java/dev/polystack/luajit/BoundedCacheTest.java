package dev.polystack.luajit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** The plug-in's per-process caches (protos, trace snapshots) filled past their capacity. */
class BoundedCacheTest {

  @Test
  void pastItsCapacityTheLeastRecentlyUsedEntryGoes() {
    BoundedCache<Integer, String> cache = new BoundedCache<>(Protos.MAX_CACHED);
    for (int i = 0; i < Protos.MAX_CACHED; i++) {
      cache.put(i, "v" + i);
    }
    assertEquals("v0", cache.get(0), "read: now the most recently used");
    for (int i = Protos.MAX_CACHED; i < Protos.MAX_CACHED + 10; i++) {
      cache.put(i, "v" + i);
      assertEquals(Protos.MAX_CACHED, cache.size());
    }
    assertTrue(cache.containsKey(0), "recently read entries stay");
    for (int i = 1; i <= 10; i++) {
      assertFalse(cache.containsKey(i), "entry " + i + ", the least recently used, went");
    }
    assertTrue(cache.containsKey(11));
    assertTrue(cache.containsKey(Protos.MAX_CACHED + 9));
  }
}
