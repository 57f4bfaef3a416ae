package dev.polystack.host.probes;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The per-boot record of stray breakpoint traps: kept, added to, and never trusted blindly. */
class BreakpointCheckTest {
  private static final String BOOT = "d36722e2-8268-4054-bcca-24c0bd1c29be";
  private static final String OTHER_BOOT = "00000000-1111-2222-3333-444444444444";

  @TempDir Path tmp;

  @Test
  void sessionsAddToThisBootsEvidenceAndOneStrayMarksTheMachine() {
    BreakpointCheck check = new BreakpointCheck(tmp.resolve("polystack"), BOOT);
    assertEquals(Optional.empty(), check.known());
    check.record(5902, 0);
    assertEquals(Optional.of(new BreakpointCheck.Evidence(5902, 0)), check.known());
    assertFalse(check.known().orElseThrow().affected());
    check.record(640, 1);
    assertEquals(new BreakpointCheck.Evidence(6542, 1), check.known().orElseThrow());
    assertTrue(check.known().orElseThrow().affected());
  }

  @Test
  void anotherBootsRecordCountsForNothing() {
    new BreakpointCheck(tmp.resolve("polystack"), OTHER_BOOT).record(100, 3);
    BreakpointCheck check = new BreakpointCheck(tmp.resolve("polystack"), BOOT);
    assertEquals(Optional.empty(), check.known());
    assertEquals(new BreakpointCheck.Evidence(10, 0), check.record(10, 0));
  }

  @Test
  void aLinkAGarbledFileOrAWritableDirectoryIsNotTrusted() throws Exception {
    Path dir = Files.createDirectory(tmp.resolve("polystack"),
        PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
    BreakpointCheck check = new BreakpointCheck(dir, BOOT);
    Path elsewhere = Files.writeString(tmp.resolve("planted"),
        "boot_id=" + BOOT + " calls=1 strays=0\n");
    Files.createSymbolicLink(check.file(), elsewhere);
    assertEquals(Optional.empty(), check.known(), "a link is not read");

    Files.delete(check.file());
    Files.writeString(check.file(), "boot_id=" + BOOT + " calls=1 strays=0 extra\n");
    assertEquals(Optional.empty(), check.known(), "only the exact line is read");
    Files.writeString(check.file(), "x".repeat(100_000));
    assertEquals(Optional.empty(), check.known(), "a big file is not read whole");

    Files.delete(check.file());
    Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxrwxrwx"));
    check.record(7, 0);
    assertFalse(Files.exists(check.file()), "nothing is written into a directory others can"
        + " write");
  }
}
