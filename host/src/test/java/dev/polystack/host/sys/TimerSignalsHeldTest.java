package dev.polystack.host.sys;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import jnr.ffi.Pointer;
import org.junit.jupiter.api.Test;

class TimerSignalsHeldTest {
  private static final int SIGALRM = 14;
  private static final int SIGVTALRM = 26;
  private static final int SIGPROF = 27;

  @Test
  void theTimerSignalsAreHeldOnThisThreadUntilClosedThenAsBefore() {
    assertFalse(blocked(SIGPROF), "a JVM thread takes SIGPROF to begin with");
    long before = mask();
    try (TimerSignalsHeld held = TimerSignalsHeld.hold()) {
      assertTrue(blocked(SIGPROF));
      assertTrue(blocked(SIGVTALRM));
      assertTrue(blocked(SIGALRM));
    }
    assertEquals(before, mask(), "the thread's mask is what it was");
  }

  /** The calling thread's signal mask, signals 1-64 as bits 0-63. */
  private static long mask() {
    Pointer current = Native.allocate(128);
    assertEquals(0, Native.libc().pthread_sigmask(0, null, current));
    return current.getLong(0);
  }

  private static boolean blocked(int signal) {
    return (mask() & (1L << (signal - 1))) != 0;
  }
}
