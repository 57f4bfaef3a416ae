package dev.polystack.host.snapshot;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.polystack.plugin.api.MemoryReadException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.zip.ZipEntry;
import java.util.zip.ZipOutputStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class SnapshotFileTest {
  @TempDir Path dir;

  @Test
  void recorderCoalescesOverlappingAndAdjacentReads() throws Exception {
    MemoryImage.Recorder rec = new MemoryImage.Recorder();
    rec.data(0x1000, 4, new byte[] {1, 2, 3, 4}, 0, 4);
    rec.data(0x1004, 2, new byte[] {5, 6}, 0, 2);
    rec.data(0x0ffe, 4, new byte[] {9, 9, 1, 2}, 0, 4);
    rec.fault(0x9000, 8);
    MemoryImage image = rec.image();
    assertEquals(1, image.ranges().size());
    assertArrayEquals(new byte[] {9, 9, 1, 2, 3, 4, 5, 6}, image.ranges().get(0x0ffeL));
    assertEquals(4, image.reads().size());

    ReplayMemory memory = new ReplayMemory(image, null);
    byte[] b = new byte[16];
    assertEquals(8, memory.read(0x0ffe, b, 0, 16)); // short read at the end of the range
    assertThrows(MemoryReadException.class, () -> memory.read(0x9000, b, 0, 8));
    assertEquals(0, memory.misses()); // a recorded fault is not a miss
    assertThrows(MemoryReadException.class, () -> memory.read(0x5000, b, 0, 8));
    assertEquals(1, memory.misses());

    ReplayMemory faulty = new ReplayMemory(image, new MemoryImage.Read(0x1002, 2, 2));
    assertEquals(4, faulty.read(0x0ffe, b, 0, 8)); // cut where the injected fault starts
    assertThrows(MemoryReadException.class, () -> faulty.read(0x1003, b, 0, 1));
    assertEquals(2, faulty.injectedHits());
  }

  @Test
  void roundTripsAndNamesAMissingModule() throws Exception {
    MemoryImage.Recorder rec = new MemoryImage.Recorder();
    rec.data(0x7000, 3, new byte[] {7, 8, 9}, 0, 3);
    long[] regs = new long[dev.polystack.plugin.api.Register.values().length];
    regs[dev.polystack.plugin.api.Register.RIP.ordinal()] = 0xffffffffff600000L;
    Snapshot s = new Snapshot(42, 64,
        List.of(new Snapshot.ThreadRecord(43, "w\"orker", "running", regs, rec.image(),
            0x7f3a12345740L), new Snapshot.ThreadRecord(44, "old", "sleeping", regs,
            MemoryImage.EMPTY)),
        List.of(), List.of(new Snapshot.ModuleRef("/nonexistent/libx.so", "abcd", 10,
            "00".repeat(32), true, null)), MemoryImage.EMPTY, "Process 42\n", Map.of("x", 1L));
    Path file = dir.resolve("s.psnap");
    try (OutputStream out = Files.newOutputStream(file)) {
      SnapshotFile.write(s, out);
    }
    Snapshot back = SnapshotFile.read(file);
    assertEquals("w\"orker", back.threads().get(0).name());
    assertArrayEquals(regs, back.threads().get(0).registers());
    assertArrayEquals(new byte[] {7, 8, 9}, back.threads().get(0).memory().ranges().get(0x7000L));
    assertEquals(0x7f3a12345740L, back.threads().get(0).threadPointer());
    assertEquals(0, back.threads().get(1).threadPointer(), "none recorded: unknown");
    assertEquals(Map.of("x", 1L), back.losses());
    assertEquals("Process 42\n", back.liveStacks());

    SnapshotException e = assertThrows(SnapshotException.class,
        () -> SnapshotModules.resolve(back, List.of(dir)));
    assertTrue(e.getMessage().contains("build id abcd"), e.getMessage());
    assertTrue(e.getMessage().contains(dir.resolve("00".repeat(32)).toString()), e.getMessage());
    assertEquals(1, e.getMessage().lines().count());
  }

  /**
   * A zip bomb within the per-entry and count caps: 3 entries of 200 MiB of zeros (under 1 MiB
   * on disk). Before the total cap the reader held all 600 MiB; now it stops at 512 MiB with one
   * line naming the file.
   */
  @Test
  void refusesAZipBombWhoseEntriesFitTheirCapsButNotTheTotal() throws Exception {
    Path bomb = dir.resolve("bomb.psnap");
    byte[] zeros = new byte[1 << 20];
    try (ZipOutputStream zip = new ZipOutputStream(Files.newOutputStream(bomb))) {
      zip.setLevel(9);
      for (int i = 0; i < 3; i++) {
        zip.putNextEntry(new ZipEntry("memory/thread-" + i + ".bin"));
        for (int mib = 0; mib < 200; mib++) {
          zip.write(zeros);
        }
        zip.closeEntry();
      }
    }
    assertTrue(Files.size(bomb) < (1 << 20), "bomb is " + Files.size(bomb) + " bytes");
    assertTrue(3 * 200L << 20 > SnapshotFile.MAX_TOTAL);
    assertTrue(200L << 20 < SnapshotFile.MAX_ENTRY);

    SnapshotException e = assertThrows(SnapshotException.class, () -> SnapshotFile.read(bomb));

    assertEquals(bomb + ": decompresses to more than 512 MiB, more than any snapshot polystack"
        + " writes; not read (a damaged or hostile file)", e.getMessage());
  }

  @Test
  void theWriterRefusesWhatTheReaderWouldRefuse() {
    byte[] module = new byte[(int) (SnapshotFile.MAX_TOTAL / 2) + 1];
    List<Snapshot.ModuleRef> modules = List.of(
        new Snapshot.ModuleRef("/a.so", "", module.length, "aa".repeat(32), true, module),
        new Snapshot.ModuleRef("/b.so", "", module.length, "bb".repeat(32), true, module));
    Snapshot s = new Snapshot(1, 8, List.of(), List.of(), modules, MemoryImage.EMPTY, "",
        Map.of());
    SnapshotException e = assertThrows(SnapshotException.class,
        () -> SnapshotFile.write(s, OutputStream.nullOutputStream()));
    assertTrue(e.getMessage().startsWith("the snapshot would hold 512 MiB"), e.getMessage());
  }

  @Test
  void refusesWhatIsNotASnapshot() throws Exception {
    Path junk = Files.write(dir.resolve("junk"), new byte[] {1, 2, 3});
    SnapshotException e = assertThrows(SnapshotException.class, () -> SnapshotFile.read(junk));
    assertTrue(e.getMessage().contains("not a polystack snapshot"), e.getMessage());
  }
}
