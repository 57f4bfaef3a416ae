package dev.polystack.host.sampling.nostop;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.polystack.host.memory.ProcessMemory;
import dev.polystack.host.memory.RemoteReadException;
import dev.polystack.host.sampling.SampleMemory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * A real child's pages as last read stand in for its memory once it has exited, and only then:
 * while it lives every read is its own, and a page never read before stays unreadable.
 */
class LastLivePagesTest {

  @Test
  void pagesReadWhileTheProcessLivedAnswerReadsAfterItExited() throws Exception {
    Process child = new ProcessBuilder("sleep", "60").start();
    int pid = (int) child.pid();
    long start = readablePages(pid, 2);
    long[] readable = {start, start + SampleMemory.PAGE};
    LastLivePages kept = new LastLivePages();
    ProcessMemory memory = kept.over(ProcessMemory.of(pid));
    byte[] first = new byte[SampleMemory.PAGE];
    assertEquals(SampleMemory.PAGE, memory.read(readable[0], first, 0, first.length));
    assertEquals(0, memory.read(8, new byte[SampleMemory.PAGE], 0, SampleMemory.PAGE),
        "unmapped in a live process: nothing read, nothing kept");
    assertEquals(1, kept.size());
    assertEquals(0, kept.served());

    child.destroyForcibly();
    assertTrue(child.waitFor(10, TimeUnit.SECONDS));
    byte[] after = new byte[SampleMemory.PAGE + 8];
    assertEquals(SampleMemory.PAGE, memory.read(readable[0], after, 8, SampleMemory.PAGE));
    assertArrayEquals(first, java.util.Arrays.copyOfRange(after, 8, after.length));
    assertEquals(1, kept.served());
    assertThrows(RemoteReadException.class,
        () -> memory.read(readable[1], new byte[SampleMemory.PAGE], 0, SampleMemory.PAGE),
        "a page never read while it lived");
    assertThrows(RemoteReadException.class, () -> memory.read(readable[0] + 8, new byte[8], 0, 8),
        "only whole pages are kept");
  }

  /** After an exec the process lives on with another program: only the kept pages answer. */
  @Test
  void aloneAnswersFromTheKeptPagesOnlyAndNeverReadsTheProcess() throws Exception {
    int pid = (int) ProcessHandle.current().pid();
    long start = readablePages(pid, 2);
    LastLivePages kept = new LastLivePages();
    byte[] first = new byte[SampleMemory.PAGE];
    assertEquals(SampleMemory.PAGE, kept.over(ProcessMemory.of(pid)).read(start, first, 0,
        first.length));
    ProcessMemory alone = kept.alone();
    byte[] again = new byte[SampleMemory.PAGE];
    assertEquals(SampleMemory.PAGE, alone.read(start, again, 0, again.length));
    assertArrayEquals(first, again);
    assertEquals(1, kept.served());
    assertThrows(RemoteReadException.class, () -> alone.read(start + SampleMemory.PAGE,
        new byte[SampleMemory.PAGE], 0, SampleMemory.PAGE), "readable, but never kept");
    assertThrows(RemoteReadException.class, () -> alone.read(start + 8, new byte[8], 0, 8),
        "only whole pages are kept");
  }

  @Test
  void keepsAtMostItsBoundOfPages() throws Exception {
    int pid = (int) ProcessHandle.current().pid();
    int pages = LastLivePages.MAX_PAGES + 10;
    long start = readablePages(pid, pages);
    LastLivePages kept = new LastLivePages();
    ProcessMemory memory = kept.over(ProcessMemory.of(pid));
    byte[] page = new byte[SampleMemory.PAGE];
    for (int i = 0; i < pages; i++) {
      assertEquals(SampleMemory.PAGE, memory.read(start + (long) i * page.length, page, 0,
          page.length));
    }
    assertEquals(LastLivePages.MAX_PAGES, kept.size());
  }

  /** The start of the first readable mapping of at least {@code pages} pages. */
  private static long readablePages(int pid, int pages) throws Exception {
    for (String line : Files.readAllLines(Path.of("/proc/" + pid + "/maps"))) {
      String[] f = line.split("\\s+");
      String[] range = f[0].split("-");
      long start = Long.parseUnsignedLong(range[0], 16);
      long end = Long.parseUnsignedLong(range[1], 16);
      if (f[1].startsWith("r") && end - start >= (long) pages * SampleMemory.PAGE
          && !line.contains("[v")) {
        return start;
      }
    }
    throw new AssertionError("no readable mapping of " + pages + " pages in process " + pid);
  }
}
