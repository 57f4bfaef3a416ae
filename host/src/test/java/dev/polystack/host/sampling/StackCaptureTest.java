package dev.polystack.host.sampling;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.polystack.host.memory.ProcessMemory;
import dev.polystack.host.testutil.TestTarget;
import dev.polystack.plugin.api.MemoryReadException;
import org.junit.jupiter.api.Test;

/**
 * The stack copy of a live process starts under the stack pointer (an epilogue's popped
 * registers, the red zone), except where the mapping begins in between. The "stack" here is a
 * readable page between two PROT_NONE pages of the test target, byte i holding i * 7.
 */
class StackCaptureTest {

  private static byte expected(long address, long page) {
    return (byte) ((address - page) * 7);
  }

  private interface Check {
    void run(StackCapture capture, long page) throws Exception;
  }

  /** Runs {@code check} on a capture of a live test target and the address of its page. */
  private static void withGuardedPage(Check check) throws Exception {
    try (TestTarget t = TestTarget.start("loop")) {
      long page = TestTarget.hex(t.awaitLine("ready", 5000).get("guarded"));
      check.run(new StackCapture(ProcessMemory.of(t.pid()), 16384), page);
    }
  }

  @Test
  void copiesFromBelowTheStackPointerSoAnEpiloguesPoppedRegistersAreInTheCopy() throws Exception {
    withGuardedPage((capture, page) -> {
      long sp = page + 1024;
      assertTrue(capture.copy(sp));
      assertEquals(sp - StackCapture.BELOW_SP, capture.start());
      assertEquals(4096 - 1024 + StackCapture.BELOW_SP, capture.length(), "up to PROT_NONE");
      // Served from the copy alone (no live fallback): a word popped 48 bytes below sp.
      SampleMemory copy = capture.memory(null);
      byte[] word = copy.readFully(sp - 48, 8);
      assertEquals(expected(sp - 48, page), word[0]);

      assertTrue(capture.copyWithPages(sp, new long[] {page}));
      assertEquals(sp - StackCapture.BELOW_SP, capture.start());
      SampleMemory snapshot = capture.snapshotMemory(null);
      assertEquals(expected(sp - 8, page), snapshot.readFully(sp - 8, 1)[0]);
      assertEquals(expected(page + 5, page), snapshot.readFully(page + 5, 1)[0], "the page too");
    });
  }

  @Test
  void startsAtTheStackPointerWhenTheMappingBeginsBelowIt() throws Exception {
    withGuardedPage((capture, page) -> {
      long sp = page + 64; // 128 bytes below lies the PROT_NONE page
      assertTrue(capture.copy(sp));
      assertEquals(sp, capture.start());
      assertEquals(4096 - 64, capture.length());
      assertEquals(expected(sp, page), capture.memory(null).readFully(sp, 1)[0]);
      assertThrows(MemoryReadException.class, () -> capture.memory(null).readFully(sp - 8, 8));

      assertTrue(capture.copyWithPages(sp, new long[] {page}));
      assertEquals(sp, capture.start());
      assertEquals(4096 - 64, capture.length());

      assertFalse(capture.copy(page - 4096 + 256), "nothing readable: an empty copy");
      assertEquals(0, capture.length());
    });
  }
}
