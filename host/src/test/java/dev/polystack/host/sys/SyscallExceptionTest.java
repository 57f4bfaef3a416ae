package dev.polystack.host.sys;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.polystack.host.sys.SyscallException.Area;
import org.junit.jupiter.api.Test;

class SyscallExceptionTest {

  @Test
  void ptraceEpermSaysWhatWhyAndWhatToDo() {
    SyscallException e = new SyscallException("ptrace(SEIZE, 1234)", Errno.EPERM, Area.PTRACE);
    assertEquals(
        "ptrace(SEIZE, 1234) failed: EPERM (operation not permitted): run as root or grant"
            + " CAP_SYS_PTRACE (and check /proc/sys/kernel/yama/ptrace_scope)",
        e.getMessage());
    assertEquals(SyscallException.Kind.PERMISSION, e.kind());
  }

  @Test
  void perfMessages() {
    String eacces = new SyscallException("perf_event_open", Errno.EACCES, Area.PERF).getMessage();
    assertTrue(eacces.contains("CAP_PERFMON") && eacces.contains("perf_event_paranoid"), eacces);
    String enoent = new SyscallException("perf_event_open", Errno.ENOENT, Area.PERF).getMessage();
    assertTrue(enoent.contains("event type not supported on this machine (no hardware PMU?)"), enoent);
    String enospc = new SyscallException("perf_event_open", Errno.ENOSPC, Area.PERF).getMessage();
    assertTrue(enospc.contains("debug register"), enospc);
  }

  @Test
  void unknownErrnoStillFormats() {
    SyscallException e = new SyscallException("frob()", 200, Area.OTHER);
    assertEquals("errno 200", e.errnoName());
    assertEquals("frob() failed: errno 200 (unknown error)", e.getMessage());
  }
}
