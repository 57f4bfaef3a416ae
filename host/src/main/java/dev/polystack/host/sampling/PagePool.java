package dev.polystack.host.sampling;

import dev.polystack.host.memory.ProcessMemory;
import dev.polystack.host.memory.RemoteReadException;
import java.util.Map;

/**
 * Reads the pages a runtime walk is expected to need ({@link PagePrefetch}), and optionally the
 * stack in front of them, with one scattered read into page buffers reused from read to read:
 * fresh buffers were a quarter of what sampling allocated, so of how often the JVM's collector
 * ran. One owner thread; a walk of one read's pages ends before the next read.
 */
public final class PagePool {
  private final byte[][] buffers = new byte[PagePrefetch.MAX_PAGES][];

  /**
   * Reads {@code lead} at {@code leadAddress} when {@code lead} is not null, and the first
   * {@link PagePrefetch#MAX_PAGES} of {@code pageAddresses}, in one call. Each page goes into
   * {@code out} by address: its bytes, or an empty array when it could not be read whole (the
   * walk then counts it as missed instead of reading it later).
   *
   * @return the bytes read into {@code lead} (0 without one)
   * @throws RemoteReadException when the process cannot be read at all
   */
  public int read(ProcessMemory live, long leadAddress, byte[] lead, long[] pageAddresses,
      Map<Long, byte[]> out) throws RemoteReadException {
    int n = Math.min(pageAddresses.length, PagePrefetch.MAX_PAGES);
    int first = lead == null ? 0 : 1;
    long[] at = new long[first + n];
    byte[][] into = new byte[first + n][];
    if (lead != null) {
      at[0] = leadAddress;
      into[0] = lead;
    }
    for (int i = 0; i < n; i++) {
      if (buffers[i] == null) {
        buffers[i] = new byte[SampleMemory.PAGE];
      }
      at[first + i] = pageAddresses[i];
      into[first + i] = buffers[i];
    }
    int[] got = live.readScattered(at, into);
    for (int i = first; i < at.length; i++) {
      out.put(at[i], got[i] == SampleMemory.PAGE ? into[i] : new byte[0]);
    }
    return lead == null ? 0 : got[0];
  }
}
