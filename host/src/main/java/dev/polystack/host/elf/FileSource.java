package dev.polystack.host.elf;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.util.Objects;

/**
 * A file read with positional reads (pread) through one open channel. The size is the one seen
 * at open; a file that shrinks later yields short reads, never a fault.
 */
final class FileSource implements ElfSource {
  /**
   * Largest single channel read: the JDK stages heap reads through a temporary direct buffer of
   * the request's size and caches it per thread, so one huge read would pin that much memory.
   */
  private static final int MAX_CHUNK = 1 << 20;

  private final String description;
  private final FileChannel channel;
  private final long size;

  FileSource(String description, FileChannel channel, long size) {
    this.description = description;
    this.channel = channel;
    this.size = size;
  }

  @Override
  public String description() {
    return description;
  }

  @Override
  public long size() {
    return size;
  }

  @Override
  public int read(long offset, byte[] dst, int dstOffset, int length) throws IOException {
    Objects.checkFromIndexSize(dstOffset, length, dst.length);
    if (offset < 0 || offset >= size) {
      return 0;
    }
    int want = (int) Math.min(length, size - offset);
    // A set interrupt flag makes a channel read close the channel for every other user of this
    // file: read with the flag clear and restore it.
    boolean interrupted = Thread.interrupted();
    try {
      int done = 0;
      while (done < want) {
        ByteBuffer b = ByteBuffer.wrap(dst, dstOffset + done, Math.min(want - done, MAX_CHUNK));
        int n = channel.read(b, offset + done);
        if (n <= 0) {
          break; // end of file: it shrank since it was opened
        }
        done += n;
      }
      return done;
    } finally {
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
  }

  @Override
  public void close() {
    try {
      channel.close();
    } catch (IOException e) {
      // a read-only descriptor: close has nothing to flush, and the descriptor is gone either way
    }
  }

  @Override
  public boolean isMemoryImage() {
    return false;
  }

  @Override
  public long baseAddress() {
    return 0;
  }

  @Override
  public String toString() {
    return "ElfSource[" + description + "]";
  }
}
