package dev.polystack.plugin.api;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/**
 * The default methods plug-ins rely on, over a region that serves reads in small pieces and
 * ends abruptly, the way process_vm_readv does at an unmapped page.
 */
class RemoteMemoryTest {

  private static final long BASE = 0x7000_0000L;

  /** Serves at most 3 bytes per read from {@code bytes} at BASE; fails outside. */
  private record ChoppyRegion(byte[] bytes) implements RemoteMemory {
    @Override
    public int read(long address, byte[] dst, int offset, int length) throws MemoryReadException {
      long index = address - BASE;
      if (index < 0 || index >= bytes.length) {
        throw new MemoryReadException(address, length, "unmapped");
      }
      int n = (int) Math.min(Math.min(length, 3), bytes.length - index);
      System.arraycopy(bytes, (int) index, dst, offset, n);
      return n;
    }
  }

  @Test
  void readFullyAssemblesShortReads() throws Exception {
    byte[] data = new byte[20];
    for (int i = 0; i < data.length; i++) {
      data[i] = (byte) (i + 1);
    }
    RemoteMemory memory = new ChoppyRegion(data);
    assertEquals(0x0807060504030201L, memory.readLong(BASE));
    assertEquals(0x0c0b0a09, memory.readInt(BASE + 8));
    byte[] tail = memory.readFully(BASE + 15, 5);
    assertArrayEquals(new byte[] {16, 17, 18, 19, 20}, tail);
  }

  @Test
  void readPastTheEndFailsWithTheAddress() {
    RemoteMemory memory = new ChoppyRegion(new byte[10]);
    MemoryReadException e =
        assertThrows(MemoryReadException.class, () -> memory.readLong(BASE + 6));
    assertEquals(BASE + 10, e.address());
    assertThrows(MemoryReadException.class, () -> memory.readFully(BASE, -1));
    assertThrows(MemoryReadException.class,
        () -> memory.readFully(BASE, RemoteMemory.MAX_READ + 1));
  }

  @Test
  void cStringsStopAtNulOrBound() throws Exception {
    byte[] data = "hello\0world".getBytes(StandardCharsets.UTF_8);
    RemoteMemory memory = new ChoppyRegion(data);
    assertEquals("hello", memory.readCString(BASE, 64));
    assertEquals("world", memory.readCString(BASE + 6, 64), "cut where memory ends");
    assertEquals("he", memory.readCString(BASE, 2));
    assertThrows(MemoryReadException.class, () -> memory.readCString(BASE, 0));
  }
}
