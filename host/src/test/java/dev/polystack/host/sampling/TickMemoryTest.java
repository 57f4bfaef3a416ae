package dev.polystack.host.sampling;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.polystack.host.bpf.CaptureRecord;
import dev.polystack.host.bpf.RecordBytes;
import dev.polystack.host.memory.RemoteMemory;
import dev.polystack.host.sys.Native;
import dev.polystack.plugin.api.MemoryReadException;
import java.nio.ByteBuffer;
import jnr.ffi.Pointer;
import org.junit.jupiter.api.Test;

/** Reads served from a capture, and reads beyond it from this very process, counted. */
class TickMemoryTest {

  @Test
  void capturedBytesWinOverTheLiveProcessAndLiveReadsAreCounted() throws Exception {
    Pointer live = Native.allocate(64);
    for (int i = 0; i < 64; i++) {
      live.putByte(i, (byte) i);
    }
    long base = live.address();
    byte[] atTick = new byte[16];
    java.util.Arrays.fill(atTick, (byte) 0x55);
    CaptureRecord r = CaptureRecord.parse(ByteBuffer.wrap(new RecordBytes()
        .stack(base + 48, new byte[] {(byte) 0xaa, (byte) 0xbb})
        .region(base + 16, atTick, 0, 3)
        .build()));
    TickMemory m = new TickMemory(r, RemoteMemory.of((int) ProcessHandle.current().pid()));

    assertEquals(0x5555555555555555L, m.readLong(base + 16), "the tick's bytes, not today's");
    assertEquals(0, m.uncapturedReads());
    byte[] span = new byte[24];
    assertEquals(24, m.read(base + 8, span, 0, 24));
    assertArrayEquals(new byte[] {8, 9, 10, 11, 12, 13, 14, 15}, java.util.Arrays.copyOf(span, 8),
        "before the region: live");
    assertEquals(0x55, span[8] & 0xff, "inside the region: captured");
    assertEquals(1, m.uncapturedReads(), "one read that needed live memory");
    assertEquals(0xaa, m.stable().readFully(base + 48, 1)[0] & 0xff);
    m.stable().readFully(base, 8);
    assertEquals(1, m.uncapturedReads(), "stable reads may go live without counting");
    java.lang.ref.Reference.reachabilityFence(live);
  }

  @Test
  void unreadableMemoryFailsAsTheApiSays() {
    CaptureRecord r = CaptureRecord.parse(ByteBuffer.wrap(new RecordBytes().build()));
    TickMemory m = new TickMemory(r, RemoteMemory.of((int) ProcessHandle.current().pid()));
    assertThrows(MemoryReadException.class, () -> m.readLong(8));
  }
}
