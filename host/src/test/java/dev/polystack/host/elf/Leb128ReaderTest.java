package dev.polystack.host.elf;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;

class Leb128ReaderTest {
  /** A cursor over a byte array whose overrun and over-long failures are distinguishable. */
  private static final class Bytes extends Leb128Reader<Exception> {
    private final int[] bytes;
    private int pos;

    Bytes(int... bytes) {
      this.bytes = bytes;
    }

    @Override
    protected int nextByte() throws Exception {
      if (pos >= bytes.length) {
        throw new Exception("overrun");
      }
      return bytes[pos++];
    }

    @Override
    protected Exception tooLong() {
      return new Exception("too long at " + pos);
    }
  }

  @Test
  void decodesTheDwarfSpecExamples() throws Exception {
    assertEquals(2, new Bytes(2).uleb());
    assertEquals(127, new Bytes(0x7f).uleb());
    assertEquals(128, new Bytes(0x80, 1).uleb());
    assertEquals(12857, new Bytes(0xb9, 0x64).uleb());
    assertEquals(-2, new Bytes(0x7e).sleb());
    assertEquals(127, new Bytes(0xff, 0).sleb());
    assertEquals(-127, new Bytes(0x81, 0x7f).sleb());
    assertEquals(-128, new Bytes(0x80, 0x7f).sleb());
  }

  @Test
  void tenBytesCarry64BitsAndAnEleventhIsTooLong() throws Exception {
    int[] max = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
    assertEquals(-1L, new Bytes(max).uleb());
    int[] min = {0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x7f};
    assertEquals(Long.MIN_VALUE, new Bytes(min).sleb());
    int[] eleven = {0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00};
    assertEquals("too long at 10",
        assertThrows(Exception.class, () -> new Bytes(eleven).uleb()).getMessage());
    assertEquals("too long at 10",
        assertThrows(Exception.class, () -> new Bytes(eleven).sleb()).getMessage());
    assertEquals("overrun", assertThrows(Exception.class, () -> new Bytes(0x80).uleb())
        .getMessage());
  }
}
