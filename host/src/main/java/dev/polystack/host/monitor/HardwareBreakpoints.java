package dev.polystack.host.monitor;

import dev.polystack.host.bpf.BpfLoadException;
import dev.polystack.host.bpf.ProbeMonitor;
import dev.polystack.host.perf.PerfEvent;
import dev.polystack.host.perf.PerfEventAttr;
import dev.polystack.host.proc.ProcFs;
import dev.polystack.host.sys.Errno;
import dev.polystack.host.sys.SyscallException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * Places hardware-breakpoint sites: for every thread of the target, one execution breakpoint
 * (a perf event, {@code PERF_TYPE_BREAKPOINT}) per site, whose handler is the probe monitor's
 * program. Opened with {@code inherit}, so threads the target creates later get them from their
 * first instruction; {@code inherit_thread} keeps fork children out. No {@code sigtrap} and no
 * ring: a hit runs the program and nothing else, and the target gets no signal. The events are
 * the monitor's file descriptors: they go, with their inherited copies, when polystack closes
 * them or dies. No byte of the target changes (docs/probes.md, "Hardware-breakpoint sites").
 */
final class HardwareBreakpoints {
  /** Rounds of listing the threads until no new one shows up (one unarmed could make more). */
  private static final int ROUNDS = 20;

  private HardwareBreakpoints() {}

  static PerfEventAttr attr(long address) {
    return PerfEventAttr.executionBreakpoint(address)
        .inherit(true)
        .inheritThread(true)
        .build();
  }

  /** A read/write watchpoint of {@code length} bytes, inherited as {@link #attr} is. */
  static PerfEventAttr watch(long address, int length) {
    return PerfEventAttr.dataBreakpoint(address, length)
        .inherit(true)
        .inheritThread(true)
        .build();
  }

  /**
   * Arms the breakpoints {@code addresses} in every thread of {@code pid}; returns how many threads were armed.
   *
   * @throws ProbeSession.Failure when a live thread cannot be armed (its debug registers are
   *     taken, or the kernel refuses), with the one line for the user
   */
  static int arm(ProcFs proc, ProbeMonitor monitor, int pid, List<PerfEventAttr> addresses)
      throws ProbeSession.Failure {
    Set<Integer> armed = new HashSet<>();
    for (int round = 0; round < ROUNDS; round++) {
      boolean fresh = false;
      for (int tid : proc.forPid(pid).taskIdsOrEmpty()) {
        if (!armed.add(tid)) {
          continue;
        }
        fresh = true;
        try {
          thread(monitor, tid, addresses);
        } catch (SyscallException e) {
          if (e.errno() == Errno.ESRCH) {
            continue; // it exited meanwhile
          }
          throw new ProbeSession.Failure("cannot place hardware breakpoints in thread " + tid
              + " of process " + pid + ": " + e.getMessage() + (e.errno() == Errno.ENOSPC
                  ? " (its debug registers are taken: a debugger, or another breakpoint"
                  + " session such as polystack vdso, holds them; end it or probe without --hw)"
                  : ""));
        } catch (BpfLoadException e) {
          throw new ProbeSession.Failure("cannot place hardware breakpoints: " + e.getMessage());
        }
      }
      if (!fresh) {
        break;
      }
    }
    if (armed.isEmpty()) {
      throw new ProbeSession.Failure("process " + pid + " has no thread left to probe");
    }
    return armed.size();
  }

  /** Opens and attaches a thread's breakpoints, then enables them together. */
  private static void thread(ProbeMonitor monitor, int tid, List<PerfEventAttr> addresses)
      throws SyscallException, BpfLoadException {
    List<PerfEvent> events = new ArrayList<>();
    for (PerfEventAttr attr : addresses) {
      PerfEvent event = PerfEvent.open(attr, tid);
      monitor.attach(event); // owned by the monitor from here, closed by its detach
      events.add(event);
    }
    for (PerfEvent event : events) {
      event.enable();
    }
  }
}
