package dev.polystack.host.sys;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

class CredentialsTest {

  @Test
  void readsTheEffectiveUidAndCapabilities() {
    Credentials c = Credentials.parse("Name:\tjava\nUid:\t1000\t0\t0\t0\nGid:\t1000\t1000\t1000"
        + "\t1000\nCapInh:\t0000000000000000\nCapEff:\t000001ffffffffff\n");
    assertEquals(new Credentials(0, 0x1ffffffffffL), c);
    assertTrue(c.root());

    Credentials user =
        Credentials.parse("Uid:\t1000\t1000\t1000\t1000\nCapEff:\t0000000000000000\n");
    assertFalse(user.root());
    assertFalse(user.privileged());
    assertTrue(new Credentials(1000, 1L << 19).privileged()); // CAP_SYS_PTRACE alone
    assertThrows(IllegalArgumentException.class, () -> Credentials.parse("Name:\tx\n"));
  }

  @Test
  void thisProcessMatchesTheOwnerOfProcSelf() throws Exception {
    assertEquals(Files.getAttribute(Path.of("/proc/self/"), "unix:uid"),
        Credentials.ofThisProcess().euid());
  }
}
