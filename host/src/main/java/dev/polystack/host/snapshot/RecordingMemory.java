package dev.polystack.host.snapshot;

import dev.polystack.host.memory.RemoteReadException;
import dev.polystack.plugin.api.MemoryReadException;
import dev.polystack.plugin.api.RemoteMemory;

/**
 * Decorators that pass reads through to the live target and record what they returned, so a
 * snapshot holds exactly the memory the unwinder and the plug-ins looked at.
 */
public final class RecordingMemory {
  private RecordingMemory() {}

  /** The plug-in view of a thread's memory (what unwinder and walks read). */
  public static RemoteMemory of(RemoteMemory live, MemoryImage.Recorder recorder) {
    return new RemoteMemory() {
      @Override
      public int read(long address, byte[] dst, int offset, int length)
          throws MemoryReadException {
        int n;
        try {
          n = live.read(address, dst, offset, length);
        } catch (MemoryReadException e) {
          recorder.fault(address, length);
          throw e;
        }
        recorder.data(address, length, dst, offset, n);
        return n;
      }
    };
  }

  /** The host view of process memory (vDSO image, plug-in reads outside a walk). */
  public static dev.polystack.host.memory.ProcessMemory ofHost(
      dev.polystack.host.memory.ProcessMemory live, MemoryImage.Recorder recorder) {
    return new dev.polystack.host.memory.ProcessMemory() {
      @Override
      public int read(long address, byte[] dst, int off, int len) throws RemoteReadException {
        int n;
        try {
          n = live.read(address, dst, off, len);
        } catch (RemoteReadException e) {
          recorder.fault(address, len);
          throw e;
        }
        recorder.data(address, len, dst, off, n);
        return n;
      }

      @Override
      public int maxReadBytes() {
        return live.maxReadBytes();
      }
    };
  }
}
