package dev.polystack.host.sampling.nostop;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.polystack.host.bpf.CaptureRecord;
import dev.polystack.host.bpf.RecordBytes;
import dev.polystack.host.memory.ProcessMemory;
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
    ProcessMemory self = ProcessMemory.of((int) ProcessHandle.current().pid());
    TickMemory m = new TickMemory(r, self, TickMemory.stablePages(self, new LastLivePages()));

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
  void stableWordsComeFromTheCaptureThenLiveAndAcrossItsEdge() throws Exception {
    Pointer live = Native.allocate(64);
    for (int i = 0; i < 64; i++) {
      live.putByte(i, (byte) i);
    }
    long base = live.address();
    byte[] atTick = new byte[16];
    java.util.Arrays.fill(atTick, (byte) 0x55);
    CaptureRecord r = CaptureRecord.parse(ByteBuffer.wrap(new RecordBytes()
        .region(base + 16, atTick, 0, 3)
        .build()));
    ProcessMemory self = ProcessMemory.of((int) ProcessHandle.current().pid());
    TickMemory m = new TickMemory(r, self, TickMemory.stablePages(self, new LastLivePages()));
    dev.polystack.plugin.api.RemoteMemory stable = m.stable();

    assertEquals(0x5555555555555555L, stable.readLong(base + 16), "captured: the tick's bytes");
    assertEquals(0x55555555, stable.readInt(base + 28));
    assertEquals(0x0f0e0d0c0b0a0908L, stable.readLong(base + 8), "outside: live");
    assertEquals(0x2b2a2928, stable.readInt(base + 40));
    assertEquals(0x555555550f0e0d0cL, stable.readLong(base + 12),
        "across the region's start: live bytes, then captured ones");
    assertEquals(0x2120555555555555L, stable.readLong(base + 26), "across its end");
    assertEquals(0, m.uncapturedReads(), "stable reads are not counted");
    assertThrows(MemoryReadException.class, () -> stable.readLong(8));
    assertThrows(MemoryReadException.class, () -> stable.readInt(8));
    java.lang.ref.Reference.reachabilityFence(live);
  }

  @Test
  void unreadableMemoryFailsAsTheApiSays() {
    CaptureRecord r = CaptureRecord.parse(ByteBuffer.wrap(new RecordBytes().build()));
    ProcessMemory self = ProcessMemory.of((int) ProcessHandle.current().pid());
    TickMemory m = new TickMemory(r, self, TickMemory.stablePages(self, new LastLivePages()));
    assertThrows(MemoryReadException.class, () -> m.readLong(8));
  }
}
