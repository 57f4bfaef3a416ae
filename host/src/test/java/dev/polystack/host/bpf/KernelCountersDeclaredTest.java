package dev.polystack.host.bpf;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.polystack.otel.counters.CounterKind;
import dev.polystack.otel.counters.Counters;
import dev.polystack.otel.counters.HostCounters;
import org.junit.jupiter.api.Test;

/** Every counter of the tick capture program has a declaration, so none lands as undeclared. */
class KernelCountersDeclaredTest {
  @Test
  void everyKernelCounterIsDeclared() {
    for (Counter c : Counter.values()) {
      var declared = HostCounters.kernel(c.key());
      assertTrue(Counters.declared(declared.name()).isPresent(), c.key());
      // Samples lost: a full ring, no user registers, a thread in its exit, a followed child the
      // targets map had no room for, and the allocation records and blocks the kernel could not
      // keep.
      boolean loss = c == Counter.RING_FULL || c == Counter.NO_USER_REGS
          || c == Counter.THREAD_EXITING
          || c == Counter.FOLLOW_FULL || c == Counter.ALLOC_DEFINITION_LOST
          || c == Counter.ALLOC_EVENT_RING_FULL || c == Counter.INUSE_MAP_FULL
          || c == Counter.ALLOC_RETURN_UNMATCHED;
      assertEquals(loss ? CounterKind.LOSS : CounterKind.CAPTURE_FIGURE, declared.kind(),
          c.key());
    }
  }
}
