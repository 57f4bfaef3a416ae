package dev.polystack.host.probes;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.polystack.plugin.api.MemoryReadException;
import org.junit.jupiter.api.Test;

/** What a BPF handler copied at a return is all the monitor may read: the rest fails. */
class CopiedMemoryTest {
  @Test
  void servesCopiedBytesOnlyAndShortensReadsAtTheirEnd() throws Exception {
    CopiedMemory m = new CopiedMemory();
    m.put(0x1000, new byte[] {1, 2, 3, 4});
    assertArrayEquals(new byte[] {2, 3}, m.readFully(0x1001, 2));
    byte[] dst = new byte[8];
    assertEquals(2, m.read(0x1002, dst, 0, 8), "a read past the copy stops at its end");
    assertThrows(MemoryReadException.class, () -> m.readFully(0x1002, 8));
    assertThrows(MemoryReadException.class, () -> m.readFully(0xfff, 1));
    assertThrows(MemoryReadException.class, () -> m.readFully(0x2000, 1));
  }
}
