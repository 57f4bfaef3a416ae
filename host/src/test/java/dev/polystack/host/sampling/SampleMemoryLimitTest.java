package dev.polystack.host.sampling;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.polystack.host.memory.ProcessMemory;
import dev.polystack.host.sys.Native;
import dev.polystack.plugin.api.MemoryReadException;
import jnr.ffi.Pointer;
import org.junit.jupiter.api.Test;

/**
 * One sample's live reads are bounded ({@link SampleMemory#MAX_PAGES} pages, 4 MiB), filled past
 * that bound on real memory: this JVM's own, read through process_vm_readv like a target's.
 */
class SampleMemoryLimitTest {
  private static final int PAGE = SampleMemory.PAGE;

  @Test
  void aSampleReadsAtMostMaxPagesLiveAndKeepsThePagesItRead() throws Exception {
    int pages = SampleMemory.MAX_PAGES + 8;
    Pointer block = Native.allocate((pages + 1) * PAGE);
    long base = (block.address() + PAGE - 1) & -PAGE;
    for (int i = 0; i < pages; i++) {
      block.putByte(base - block.address() + (long) i * PAGE, (byte) (i + 1));
    }
    SampleMemory memory = new SampleMemory(ProcessMemory.of((int) ProcessHandle.current().pid()),
        0, new byte[0], 0);
    for (int i = 0; i < SampleMemory.MAX_PAGES; i++) {
      assertEquals((byte) (i + 1), memory.readFully(base + (long) i * PAGE, 1)[0], "page " + i);
    }
    for (int i = SampleMemory.MAX_PAGES; i < pages; i++) {
      long at = base + (long) i * PAGE;
      // Past what one sample may pull: a failed read (the walk ends in an error frame).
      assertThrows(MemoryReadException.class, () -> memory.readFully(at, 1), "page " + i);
    }
    assertEquals((byte) 1, memory.readFully(base, 1)[0], "the pages read stay readable");
    assertEquals((byte) SampleMemory.MAX_PAGES,
        memory.readFully(base + (long) (SampleMemory.MAX_PAGES - 1) * PAGE, 1)[0]);
  }
}
