package dev.polystack.host.sys;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static dev.polystack.host.sys.DescriptorLimit.softLimit;

import dev.polystack.host.elf.ElfFile;
import dev.polystack.host.elf.ElfParseException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalLong;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * A JVM whose descriptor limit is low opens far more ELF files than the limit, one after the
 * other, without closing them: the files nobody refers to any more are collected when the limit
 * is reached, and every open succeeds. Holding them all instead fails with the limit's error,
 * which shows the limit is real in the child.
 */
class DescriptorLimitTest {
  static final int LIMIT = 256;
  static final int OPENS = 2000;
  static final Path LIBC = Path.of("/lib/x86_64-linux-gnu/libc.so.6");

  /** Child: opens {@code OPENS} parsed files of libc, keeping them when args[0] is "hold". */
  public static void main(String[] args) {
    if (args[0].equals("limit")) {
      System.out.println(softLimit());
      return;
    }
    boolean hold = args[0].equals("hold");
    List<ElfFile> held = new ArrayList<>();
    for (int i = 0; i < OPENS; i++) {
      try {
        ElfFile elf = ElfFile.open(LIBC);
        elf.buildId();
        if (hold) {
          held.add(elf);
        }
      } catch (ElfParseException e) {
        System.out.println("failed at " + i + ": " + e.getMessage());
        System.exit(1);
      }
    }
    System.out.println("opened " + OPENS + ", held " + held.size());
  }

  private static Child run(String mode) throws Exception {
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    Process p = new ProcessBuilder("prlimit", "--nofile=" + LIMIT + ":" + LIMIT, java,
        "-cp", System.getProperty("java.class.path"), DescriptorLimitTest.class.getName(), mode)
        .redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
    assertTrue(p.waitFor(120, TimeUnit.SECONDS), "child did not finish");
    return new Child(p.exitValue(), out);
  }

  private record Child(int exit, String out) {}

  @Test
  void theSoftLimitIsTheOneTheProcessRunsUnder() throws Exception {
    Child c = run("limit");
    assertEquals(0, c.exit(), c.out());
    assertEquals(OptionalLong.of(LIMIT).toString(), c.out());
  }

  @Test
  void limitsTextsAreReadStrictly() {
    String header = "Limit                     Soft Limit           Hard Limit           Units     \n";
    assertEquals(OptionalLong.of(1024), softLimit(header
        + "Max open files            1024                 524288               files     \n"));
    assertEquals(OptionalLong.empty(), softLimit(header
        + "Max open files            unlimited            unlimited            files     \n"));
    assertEquals(OptionalLong.empty(), softLimit(header));
    assertEquals(OptionalLong.empty(), softLimit("Max open files 99999999999999999999999 x\n"));
  }

  @Test
  void filesNobodyHoldsDoNotExhaustTheLimit() throws Exception {
    Child c = run("drop");
    assertEquals(0, c.exit(), c.out());
    assertEquals("opened " + OPENS + ", held 0", c.out());
  }

  @Test
  void filesStillHeldDoExhaustIt() throws Exception {
    Child c = run("hold");
    assertNotEquals(0, c.exit(), c.out());
    assertTrue(c.out().contains("Too many open files"), c.out());
  }
}
