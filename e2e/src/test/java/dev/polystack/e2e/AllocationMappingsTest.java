package dev.polystack.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code record --event alloc} counts the anonymous memory a program maps itself with the C
 * library's mmap, and the munmap that frees it, once: map_shares.c (every call sampled) maps
 * 3 blocks under map_big and 1 under map_small per round and keeps map_small's last 5; its
 * 1 MiB malloc, which glibc serves with its own mmap, counts once, as the malloc; its file
 * mapping does not count.
 */
class AllocationMappingsTest {
  private static final long ROUNDS = 100;
  private static final long BLOCK = 64 * 1024;

  @TempDir Path dir;

  @Test
  void anonymousMappingsCountOnceAndFileMappingsNot() throws Exception {
    Map<String, Long> objects = byFunction("alloc_objects");
    assertEquals(3 * ROUNDS, objects.get("map_big"), objects::toString);
    assertEquals(ROUNDS, objects.get("map_small"), objects::toString);
    assertEquals(ROUNDS, objects.get("big_malloc"), objects::toString);
    Map<String, Long> space = byFunction("alloc_space");
    assertEquals(3 * ROUNDS * BLOCK, space.get("map_big"), space::toString);
    assertEquals(ROUNDS << 20, space.get("big_malloc"), space::toString);
    // Everything beyond the three functions: stdout's buffer, one malloc of 4 KiB at most.
    assertEquals(true, space.getOrDefault("other", 0L) <= 4096, space::toString);
    Map<String, Long> inuse = byFunction("inuse_space");
    assertEquals(5 * BLOCK, inuse.get("map_small"), inuse::toString);
    assertEquals(0L, inuse.getOrDefault("map_big", 0L), inuse::toString);
  }

  /** One every-call record of map_shares, folded by {@code type}, summed by function. */
  private Map<String, Long> byFunction(String type) throws Exception {
    Path out = dir.resolve(type + ".folded");
    var r = Distribution.run("record", "--event", "alloc", "--alloc-every-call",
        "--sample-type", type, "-o", out.toString(), "--",
        Workloads.binary("map_shares").toString(), Long.toString(ROUNDS), "5");
    assertEquals(0, r.exitCode(), r.stderr());
    Map<String, Long> sums = new TreeMap<>();
    Tools.folded(out).forEach((stack, n) -> {
      String key = "other";
      for (String f : Tools.frames(stack)) {
        if (List.of("map_big", "map_small", "big_malloc").contains(f)) {
          key = f;
        }
      }
      sums.merge(key, n, Long::sum);
    });
    return sums;
  }
}
