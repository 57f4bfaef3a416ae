package dev.polystack.host.bpf;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import org.junit.jupiter.api.Test;

/** Allocation records are parsed with every size checked: a bad one is refused, never read past. */
class AllocRecordTest {
  private static ByteBuffer allocation(int size, int kind) {
    ByteBuffer b = ByteBuffer.allocate(size).order(ByteOrder.LITTLE_ENDIAN);
    b.putShort(0, (short) 3).putShort(2, (short) 64).putInt(4, 64).putInt(8, 42).putInt(12, 43)
        .putLong(16, 99).putShort(24, (short) 2);
    if (size >= 64) {
      b.put(26, (byte) kind).put(27, (byte) 2).putLong(32, 4096).putLong(40, 0x1000)
          .putLong(48, 0).putLong(56, 0xabc);
    }
    return b;
  }

  @Test
  void anAllocationParses() {
    AllocRecord r = AllocRecord.parse(allocation(64, 1));
    assertTrue(r.allocation());
    assertEquals(42, r.tgid());
    assertEquals(43, r.tid());
    assertEquals(2, r.site());
    assertEquals(4096, r.bytes());
    assertEquals(0x1000, r.address());
    assertEquals(0xabc, r.digest());
    assertTrue(r.noAddress());
    assertTrue(AllocRecord.isAllocation(allocation(64, 1)));
    // A runtime's lua_Alloc site (alloc_probe.h K_LUA_ALLOC).
    assertEquals(AllocationProbes.Kind.LUA_ALLOC,
        AllocationProbes.Kind.of(AllocRecord.parse(allocation(64, 7)).kind()));
  }

  @Test
  void aFreeParses() {
    ByteBuffer b = ByteBuffer.allocate(48).order(ByteOrder.LITTLE_ENDIAN);
    b.putShort(0, (short) 4).putShort(2, (short) 48).putInt(4, 48).putInt(8, 7).putInt(12, 8)
        .putLong(24, 0x2000).putLong(32, 5).putLong(40, 100);
    AllocRecord r = AllocRecord.parse(b);
    assertFalse(r.allocation());
    assertEquals(0x2000, r.address());
    assertEquals(5, r.digest());
    assertEquals(100, r.bytes());
  }

  @Test
  void malformedRecordsAreRefused() {
    assertThrows(IllegalArgumentException.class, () -> AllocRecord.parse(allocation(40, 1)));
    assertThrows(IllegalArgumentException.class, () -> AllocRecord.parse(allocation(64, 99)));
    ByteBuffer wrongSize = allocation(64, 1);
    wrongSize.putInt(4, 4096);
    assertThrows(IllegalArgumentException.class, () -> AllocRecord.parse(wrongSize));
    ByteBuffer tick = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putShort(0, (short) 1);
    assertFalse(AllocRecord.isAllocation(tick));
    assertFalse(AllocRecord.isDefinition(tick));
  }
}
