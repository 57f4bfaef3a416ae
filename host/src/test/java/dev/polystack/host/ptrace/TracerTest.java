package dev.polystack.host.ptrace;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.polystack.host.proc.ProcFs;
import dev.polystack.host.memory.ProcessMemory;
import dev.polystack.host.sys.Errno;
import dev.polystack.host.sys.SyscallException;
import dev.polystack.host.testutil.TestTarget;
import java.nio.file.Files;
import java.time.Duration;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeoutException;
import org.junit.jupiter.api.Test;

class TracerTest {
  private static final Duration STOP_TIMEOUT = Duration.ofSeconds(5);

  @Test
  void roundTripOnSingleThreadedChild() throws Exception {
    try (TestTarget t = TestTarget.start("loop")) {
      Map<String, String> ready = t.awaitLine("ready", 5000);
      long pattern = TestTarget.hex(ready.get("pattern"));
      int pid = t.pid();
      try (Tracer tracer = Tracer.start(pid)) {
        tracer.seize(pid);
        tracer.interrupt(pid);
        TraceEvent ev = tracer.awaitEvent(pid, STOP_TIMEOUT);
        assertTrue(ev.status().stopped(), ev.toString());
        assertEquals(PtraceConstants.EVENT_STOP, ev.status().ptraceEvent());
        assertFalse(ev.status().groupStop());

        UserRegs regs = tracer.getRegs(pid);
        assertTrue(TestTarget.inStack(pid, regs.rsp()), "rsp in [stack]");
        // The child may be caught inside the vDSO clock read; retry until in the executable.
        for (int i = 0; i < 20 && !TestTarget.inExecutableOf(pid, regs.rip()); i++) {
          tracer.cont(pid, 0);
          Thread.sleep(5);
          assertNotNull(tracer.stop(pid, STOP_TIMEOUT));
          regs = tracer.getRegs(pid);
        }
        assertTrue(TestTarget.inExecutableOf(pid, regs.rip()), "rip in executable mapping");

        byte[] viaVm = ProcessMemory.of(pid).readBytes(pattern, 32);
        byte[] viaPeek = new byte[32];
        for (int i = 0; i < 4; i++) {
          long w = tracer.peekData(pid, pattern + 8L * i);
          for (int b = 0; b < 8; b++) {
            viaPeek[8 * i + b] = (byte) (w >>> (8 * b));
          }
        }
        assertArrayEquals(viaVm, viaPeek);
        assertEquals(0x1122334455667788L, ProcessMemory.of(pid).readLong(pattern));
        assertEquals(0xdeadbeefcafebabeL, ProcessMemory.of(pid).readLong(pattern + 8));

        // Debug registers are readable through PEEKUSER at the u_debugreg offset.
        long dr7 = tracer.peekUser(pid, PtraceConstants.debugRegisterOffset(7));
        assertEquals(0, dr7 & 0xff, "no local/global breakpoint enabled");

        tracer.cont(pid, 0);
        Thread.sleep(20);
        tracer.interrupt(pid);
        assertTrue(tracer.awaitEvent(pid, STOP_TIMEOUT).status().stopped());
        tracer.cont(pid, 0);
        assertTrue(tracer.detachSafely(pid));
        assertTrue(tracer.tracedThreads().isEmpty());
      }
      char st = TestTarget.state(pid);
      assertNotEquals('t', st);
      assertNotEquals('T', st);
      t.finish();
      WaitStatus exit = t.process.waitFor(Duration.ofSeconds(10));
      assertTrue(exit.exited(), exit.toString());
      assertEquals(7, exit.exitCode());
      assertTrue(Files.readString(t.stdout).contains("done counter="));
    }
  }

  @Test
  void stopConsumesTheReportItReturns() throws Exception {
    try (TestTarget t = TestTarget.start("loop")) {
      t.awaitLine("ready", 5000);
      int pid = t.pid();
      try (Tracer tracer = Tracer.start(pid)) {
        tracer.seize(pid);
        for (int round = 0; round < 3; round++) {
          assertNotNull(tracer.stop(pid, STOP_TIMEOUT));
          // Left queued, this stop would answer the next interrupt's wait before that stop exists.
          assertThrows(TimeoutException.class, () -> tracer.awaitEvent(pid, Duration.ZERO));
          tracer.cont(pid, 0);
        }
        tracer.interrupt(pid);
        assertTrue(tracer.awaitEvent(pid, STOP_TIMEOUT).status().stopped());
        tracer.cont(pid, 0);
        assertTrue(tracer.detachSafely(pid));
      }
      t.finish();
      assertEquals(7, t.process.waitFor(Duration.ofSeconds(10)).exitCode());
    }
  }

  @Test
  void multiThreadedChildSeizeAllInterruptAllDetachAll() throws Exception {
    try (TestTarget t = TestTarget.start("threads", "3")) {
      t.awaitLine("ready", 5000);
      int pid = t.pid();
      try (Tracer tracer = Tracer.start(pid)) {
        Set<Integer> tids = seizeAll(tracer, pid);
        assertEquals(4, tids.size(), tids.toString());
        for (int tid : tids) {
          tracer.interrupt(tid);
        }
        // Collect stops in whatever order they arrive; none may be lost.
        for (int tid : tids) {
          WaitStatus st = tracer.awaitEvent(tid, STOP_TIMEOUT).status();
          assertTrue(st.stopped(), tid + ": " + st);
          UserRegs r = tracer.getRegs(tid);
          assertNotEquals(0, r.rip());
          assertNotEquals(0, r.rsp());
        }
        // Leave them stopped: close() must detach stopped threads too.
      }
      for (int tid : ProcFs.system().forPid(pid).taskIds()) {
        char st = TestTarget.state(tid);
        assertNotEquals('t', st, "thread " + tid);
      }
      t.finish();
      WaitStatus exit = t.process.waitFor(Duration.ofSeconds(10));
      assertEquals(5, exit.exitCode(), exit.toString());
    }
  }

  @Test
  void spinningWaitsReturnTheStopAndFallBackToABlockingWaitThatTheWakeupEnds() throws Exception {
    try (TestTarget t = TestTarget.start("loop")) {
      t.awaitLine("ready", 5000);
      int pid = t.pid();
      try (Tracer tracer = Tracer.start(pid)) {
        tracer.seize(pid);
        tracer.call(p -> {
          TracerWakeup wakeup = TracerWakeup.start().orElseThrow();
          try {
            // A running thread: the stop arrives within the spin or the blocking wait after it.
            p.interrupt(pid);
            WaitStatus st = p.awaitStopBlocking(pid, 2_000_000_000L, 300_000);
            assertNotNull(st);
            assertEquals(PtraceConstants.EVENT_STOP, st.ptraceEvent());
            assertEquals(st, p.takeEvent(pid).status());
            p.cont(pid, 0);
            p.interrupt(pid);
            // The wake-up's periodic signal may end the blocking wait before the stop arrives
            // (false, by contract): wait again, as the samplers do.
            long deadline = System.nanoTime() + 2_000_000_000L;
            boolean reported;
            do {
              reported = p.awaitAny(300_000);
            } while (!reported && System.nanoTime() < deadline);
            assertTrue(reported, "no report within 2 s of the interrupt");
            assertEquals(PtraceConstants.EVENT_STOP, p.nextEvent().status().ptraceEvent());
            // Nothing to report: the spin ends, the blocking wait follows, and the wake-up's
            // signal ends that within a period instead of leaving the tracer asleep.
            long before = System.nanoTime();
            assertFalse(p.awaitAny(1_000_000));
            long took = System.nanoTime() - before;
            assertTrue(took >= (Ptrace.SPIN_ALLOWED ? 1_000_000 : 0), "spun " + took + " ns");
            assertTrue(took < 2_000_000_000L, "woken after " + took + " ns");
            p.cont(pid, 0);
          } finally {
            wakeup.close();
          }
          return null;
        });
      }
      t.finish();
      assertEquals(7, t.process.waitFor(Duration.ofSeconds(10)).exitCode());
    }
  }

  @Test
  void closeDetachesRunningThreads() throws Exception {
    try (TestTarget t = TestTarget.start("threads", "2")) {
      t.awaitLine("ready", 5000);
      int pid = t.pid();
      try (Tracer tracer = Tracer.start(pid)) {
        assertEquals(3, seizeAll(tracer, pid).size());
        // All running: close() has to interrupt, wait and then detach each.
      }
      assertNotEquals('t', TestTarget.state(pid));
      t.finish();
      assertEquals(5, t.process.waitFor(Duration.ofSeconds(10)).exitCode());
    }
  }

  /** Seizes every thread the way the commands do (TraceeControl); returns the traced ones. */
  private static Set<Integer> seizeAll(Tracer tracer, int pid) throws SyscallException {
    return tracer.call(p -> {
      TraceeControl control = new TraceeControl(ProcFs.system(), pid,
          PtraceConstants.DEFAULT_OPTIONS, TraceeControl.Hooks.NONE);
      assertTrue(control.seizeAll(p), "process " + pid + " seized");
      return p.tracedThreads();
    });
  }

  @Test
  void seizeOfMissingProcessIsEsrchWithAdvice() {
    int pid = 4_000_000; // below the 64-bit pid_max default (4194304) but practically never in use
    try (Tracer tracer = Tracer.start(pid)) {
      SyscallException e = assertThrows(SyscallException.class, () -> tracer.seize(pid));
      assertEquals(Errno.ESRCH, e.errno());
      assertEquals("ESRCH", e.errnoName());
      assertEquals(SyscallException.Kind.NO_SUCH_PROCESS, e.kind());
      assertTrue(e.getMessage().startsWith("ptrace(SEIZE, " + pid + ") failed: ESRCH (no such process)"), e.getMessage());
      assertTrue(e.getMessage().contains("may have exited"), e.getMessage());
    }
  }

  @Test
  void ptraceOffTracerThreadIsRejected() throws Exception {
    try (Tracer tracer = Tracer.start(1)) {
      Ptrace p = tracer.call(x -> x);
      assertThrows(IllegalStateException.class, () -> p.interrupt(1));
    }
  }

  @Test
  void waitStatusDecoding() {
    assertEquals(3, new WaitStatus(3 << 8).exitCode());
    assertTrue(new WaitStatus(3 << 8).exited());
    WaitStatus killed = new WaitStatus(9 | 0x80);
    assertTrue(killed.killed());
    assertEquals(9, killed.termSignal());
    assertTrue(killed.coreDumped());
    WaitStatus group = new WaitStatus((PtraceConstants.EVENT_STOP << 16) | (19 << 8) | 0x7f);
    assertTrue(group.stopped());
    assertTrue(group.groupStop());
    WaitStatus interrupt = new WaitStatus((PtraceConstants.EVENT_STOP << 16) | (5 << 8) | 0x7f);
    assertFalse(interrupt.groupStop());
    assertFalse(interrupt.signalDeliveryStop());
    assertTrue(new WaitStatus((11 << 8) | 0x7f).signalDeliveryStop());
    assertTrue(new WaitStatus(0xffff).continued());
  }
}
