package dev.polystack.host.sampling.nostop;

import dev.polystack.host.cache.BoundedMap;
import dev.polystack.host.memory.ProcessMemory;
import dev.polystack.host.memory.RemoteReadException;
import dev.polystack.host.sampling.SampleMemory;
import dev.polystack.host.sys.Errno;
import dev.polystack.host.sys.SyscallException;
import java.util.Map;

/**
 * The pages a process's stable reads (see {@code RemoteMemory.stable()}) last found, so that
 * records still in the ring when the process exits can be walked: the host reads the ring on a
 * timer, so up to a poll interval of records arrives after the target's memory is gone, and a
 * runtime's code objects (a LuaJIT trace's header, a prototype) are read live. A stable object
 * does not change while it is reachable, so its bytes as last read are its bytes at the tick,
 * unless it was created at that address after the last read. The pages serve only reads that
 * failed because the process is gone (ESRCH), or every read of a program the process replaced
 * since ({@link #alone}); every other read goes to the process. Bounded;
 * not thread-safe (one reader thread walks a process's records).
 */
final class LastLivePages {
  /** Most pages kept per process: 512 KiB, least recently read dropped first. */
  static final int MAX_PAGES = 128;

  private final Map<Long, byte[]> pages = BoundedMap.leastRecentlyUsed(MAX_PAGES);
  private long served;

  /** Reads served from the kept pages because the process was gone. */
  long served() {
    return served;
  }

  int size() {
    return pages.size();
  }

  /** {@code live}, whose whole-page reads are kept, and answered from them once it is gone. */
  ProcessMemory over(ProcessMemory live) {
    return new ProcessMemory() {
      @Override
      public int read(long address, byte[] dst, int off, int len) throws RemoteReadException {
        boolean page = len == SampleMemory.PAGE && (address & (SampleMemory.PAGE - 1)) == 0;
        try {
          int n = live.read(address, dst, off, len);
          if (page && n == len) {
            byte[] copy = new byte[len];
            System.arraycopy(dst, off, copy, 0, len);
            pages.put(address, copy);
          }
          return n;
        } catch (RemoteReadException e) {
          byte[] kept = page && gone(e) ? pages.get(address) : null;
          if (kept == null) {
            throw e;
          }
          System.arraycopy(kept, 0, dst, off, len);
          served++;
          return len;
        }
      }

      @Override
      public int maxReadBytes() {
        return live.maxReadBytes();
      }
    };
  }

  /**
   * The kept pages alone, for records of a program the process has since replaced with exec:
   * its memory is the next program's now, so whole-page reads the pages hold are answered and
   * every other read fails.
   */
  ProcessMemory alone() {
    return new ProcessMemory() {
      @Override
      public int read(long address, byte[] dst, int off, int len) throws RemoteReadException {
        boolean page = len == SampleMemory.PAGE && (address & (SampleMemory.PAGE - 1)) == 0;
        byte[] kept = page ? pages.get(address) : null;
        if (kept == null) {
          throw new RemoteReadException("not among the pages last read; the process runs"
              + " another program since", address, len, 0, RemoteReadException.Reason.UNREADABLE,
              null);
        }
        System.arraycopy(kept, 0, dst, off, len);
        served++;
        return len;
      }

      @Override
      public int maxReadBytes() {
        return DEFAULT_MAX_READ;
      }
    };
  }

  private static boolean gone(RemoteReadException e) {
    return e.getCause() instanceof SyscallException s && s.errno() == Errno.ESRCH;
  }
}
