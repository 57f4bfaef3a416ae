package dev.polystack.host.pipeline;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

class BpfEngineRingTest {

  @Test
  void theRingHoldsAboutASecondOfEveryCpusTicks() {
    // 2 CPUs at the agent's 20 Hz: 1.25 MiB of ticks a second, the 2 MiB floor.
    assertEquals(2 << 20, BpfEngine.ringBytes(2, 20));
    // 2 CPUs at record's 99 Hz: 6.2 MiB a second.
    assertEquals(8 << 20, BpfEngine.ringBytes(2, 99));
    // 64 CPUs at 20 Hz: 40 MiB a second.
    assertEquals(64 << 20, BpfEngine.ringBytes(64, 20));
    // Bounded above, whatever the host and rate.
    assertEquals(64 << 20, BpfEngine.ringBytes(512, 10_000));
    assertEquals(2 << 20, BpfEngine.ringBytes(0, 1));
  }
}
