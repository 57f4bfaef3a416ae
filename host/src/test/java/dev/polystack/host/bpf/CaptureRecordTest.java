package dev.polystack.host.bpf;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.polystack.plugin.api.Register;
import java.nio.ByteBuffer;
import java.util.Random;
import org.junit.jupiter.api.Test;

class CaptureRecordTest {

  private static byte[] sample() {
    return new RecordBytes().ids(42, 43).time(123_456_789L).inKernel()
        .register(Register.RIP.ordinal(), 0x401000).register(Register.RSP.ordinal(), 0x7ffd1080)
        .stack(0x7ffd1000, new byte[] {1, 2, 3, 4, 5})
        .region(0x5000, new byte[] {9, 8, 7}, 0, 4)
        .region(0x6000, new byte[0], 0, 6)
        .build();
  }

  @Test
  void readsWhatTheKernelProgramWrites() {
    CaptureRecord r = CaptureRecord.parse(ByteBuffer.wrap(sample()));
    assertEquals(42, r.tgid());
    assertEquals(43, r.tid());
    assertEquals(123_456_789L, r.monotonicNanos());
    assertTrue(r.inKernel());
    assertEquals(0x401000, r.regs()[Register.RIP.ordinal()]);
    assertEquals(0x7ffd1000, r.stackStart());
    assertArrayEquals(new byte[] {1, 2, 3, 4, 5}, r.stack());
    assertEquals(2, r.regions().size());
    assertEquals(0x5000, r.regions().get(0).address());
    assertArrayEquals(new byte[] {9, 8, 7}, r.regions().get(0).bytes());
    assertEquals(4, r.regions().get(0).step());
    assertEquals(0, r.regions().get(1).bytes().length);
  }

  @Test
  void truncatedRecordsAreRefusedWhole() {
    byte[] whole = sample();
    for (int n = 0; n < whole.length; n++) {
      ByteBuffer cut = ByteBuffer.wrap(whole, 0, n).slice();
      assertThrows(IllegalArgumentException.class, () -> CaptureRecord.parse(cut), "at " + n);
    }
  }

  /**
   * A record with flipped bits either parses into lengths that lie inside it or is refused with
   * IllegalArgumentException: never an out-of-bounds read, never an allocation it does not hold.
   */
  @Test
  void flippedBitsNeverReadPastTheRecord() {
    Random random = new Random(16);
    byte[] whole = sample();
    int parsed = 0;
    for (int trial = 0; trial < 20_000; trial++) {
      byte[] b = whole.clone();
      for (int flips = 1 + random.nextInt(3); flips > 0; flips--) {
        int bit = random.nextInt(b.length * 8);
        b[bit / 8] ^= (byte) (1 << (bit % 8));
      }
      try {
        CaptureRecord r = CaptureRecord.parse(ByteBuffer.wrap(b));
        int total = r.stack().length;
        for (CaptureRecord.Region region : r.regions()) {
          total += region.bytes().length;
        }
        assertTrue(total <= b.length, "parsed more bytes than the record holds");
        parsed++;
      } catch (IllegalArgumentException e) {
        // refused whole: what the sampler counts as malformed_record
      }
    }
    assertTrue(parsed > 1000, "most flips land in values, not lengths: " + parsed);
  }
}
