package dev.polystack.host.pipeline;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.polystack.host.proc.ProcFs;
import java.util.Set;
import com.google.re2j.Pattern;
import org.junit.jupiter.api.Test;

/** Selections against this test's own process and /proc, and the resource's container id. */
class ProcessSelectionTest {
  private static final ProcFs PROC = ProcFs.system();
  private static final int SELF = (int) ProcessHandle.current().pid();

  @Test
  void hostWideSelectsEveryProcessAndByNameOnlyWhatMatches() {
    assertTrue(ProcessSelection.hostWide().isHostWide());
    assertTrue(ProcessSelection.hostWide().selects(PROC, SELF));
    assertTrue(new ProcessSelection(Set.of(), "java", null, "").selects(PROC, SELF));
    assertFalse(new ProcessSelection(Set.of(), "javax", null, "").selects(PROC, SELF));
    assertTrue(new ProcessSelection(Set.of(), "", Pattern.compile("surefire|junit|java"), "")
        .selects(PROC, SELF));
    assertFalse(new ProcessSelection(Set.of(), "java", Pattern.compile("^no such"), "")
        .selects(PROC, SELF), "every criterion must hold");
    assertTrue(new ProcessSelection(Set.of(SELF), "nope", null, "").selects(PROC, SELF),
        "a pid given is selected whatever the names say");
  }

  @Test
  void cgroupSelectsTheProcessesOfThatCgroupAndBelow() {
    String mine = ProcessSelection.cgroupOf(PROC, SELF); // "/" in the root cgroup
    assertTrue(mine.startsWith("/"), mine);
    assertTrue(new ProcessSelection(Set.of(), "", null, "/sys/fs/cgroup" + mine)
        .selects(PROC, SELF));
    assertTrue(new ProcessSelection(Set.of(), "", null, "/").selects(PROC, SELF),
        "the root cgroup holds every process");
    assertFalse(new ProcessSelection(Set.of(), "", null, mine + "-other").selects(PROC, SELF));
    assertTrue(ProcessSelection.inCgroup("/a/b/c", "/a/b"));
    assertFalse(ProcessSelection.inCgroup("/a/bc", "/a/b"), "a prefix of a name is not a parent");
  }

  /** A process's own cgroup is relative to the hierarchy already: only slashes are trimmed. */
  @Test
  void aProcessCgroupIsTakenAsTheKernelGivesIt() {
    assertEquals("/system.slice/x.service", CgroupV2.fromRoot("/system.slice/x.service/\n"));
    assertEquals("/", CgroupV2.fromRoot("/"));
    assertEquals("", CgroupV2.fromRoot(" "));
    assertEquals("/sys/fs/cgroup/a", CgroupV2.fromRoot("/sys/fs/cgroup/a"));
    assertEquals("/a", CgroupV2.normalize("/sys/fs/cgroup/a"));
  }

  @Test
  void goneProcessesAreNotSelectedAndBadPidsAreRefused() {
    assertFalse(new ProcessSelection(Set.of(), "", null, "").selects(PROC, SELF),
        "no criterion is no process, not every process");
    assertFalse(new ProcessSelection(Set.of(), "java", null, "").selects(PROC, 1 << 30));
    assertThrows(IllegalArgumentException.class,
        () -> new ProcessSelection(Set.of(0), "", null, ""));
  }

  @Test
  void containerIdComesFromTheInnermostIdInTheCgroupPath() {
    String id = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    assertEquals(id, ProcessResource.containerId("system.slice/docker-" + id + ".scope"));
    assertEquals(id, ProcessResource.containerId("kubepods/besteffort/pod1/" + id));
    assertEquals("", ProcessResource.containerId("user.slice/user-0.slice/session-1.scope"));
    assertEquals("", ProcessResource.containerId("x/" + id + "0"), "65 digits is no id");
  }
}
