package dev.polystack.host.sys;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import jnr.ffi.LibraryLoader;
import jnr.ffi.Pointer;
import org.junit.jupiter.api.Test;

/** Trimming against glibc's real allocator, measured in this process's resident memory. */
class NativeHeapTest {
  /** The C allocator, bound for the test only. */
  public interface Malloc {
    Pointer malloc(long size);

    void free(Pointer p);
  }

  private static final int BLOCK = 8 << 10; // below the mmap threshold: taken from an arena
  private static final int BLOCKS = 4096; // 32 MiB

  @Test
  void trimmingReturnsWhatWasFreedToTheKernel() throws Exception {
    Malloc c = LibraryLoader.create(Malloc.class).load("c");
    List<Pointer> blocks = new ArrayList<>();
    for (int i = 0; i < BLOCKS; i++) {
      Pointer p = c.malloc(BLOCK);
      for (int at = 0; at < BLOCK; at += 4096) {
        p.putByte(at, (byte) 1); // resident
      }
      blocks.add(p);
    }
    // All but the last: it keeps the arena's top in use, so free() itself trims nothing.
    for (int i = 0; i < BLOCKS - 1; i++) {
      c.free(blocks.get(i));
    }
    long freed = rssAnonKib();
    assertTrue(NativeHeap.trim(), "glibc has malloc_trim");
    long trimmed = rssAnonKib();
    c.free(blocks.get(BLOCKS - 1));
    assertTrue(freed - trimmed >= 16 << 10, "RssAnon " + freed + " kB after free, " + trimmed
        + " kB after the trim: less than 16 MiB of the 32 MiB freed went back");
  }

  private static long rssAnonKib() throws Exception {
    for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
      if (line.startsWith("RssAnon:")) {
        return Long.parseLong(line.replaceAll("\\D", ""));
      }
    }
    throw new AssertionError("no RssAnon in /proc/self/status");
  }
}
