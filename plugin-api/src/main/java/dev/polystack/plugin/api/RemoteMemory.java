package dev.polystack.plugin.api;

import java.nio.charset.StandardCharsets;

/**
 * Read-only, bounded access to a target's memory, provided by the host.
 *
 * <p>Live, it reads the process; replayed, it reads what a snapshot recorded. Every value read
 * is untrusted: callers validate pointers and bound their loops.
 *
 * @since 1.0
 */
public interface RemoteMemory {

  /** Largest single read the host serves; longer requests fail instead of allocating. */
  int MAX_READ = 1 << 20;

  /**
   * Reads up to {@code length} bytes at {@code address} into {@code dst}; returns how many bytes
   * were read, which is less than {@code length} when the range runs into unreadable memory.
   *
   * @throws MemoryReadException if not even the first byte can be read or {@code length} exceeds
   *     {@link #MAX_READ}
   */
  int read(long address, byte[] dst, int offset, int length) throws MemoryReadException;

  /**
   * This memory for objects that do not change while they are reachable (a function's
   * prototype and bytecode, interned strings, compiled code and its metadata). A host that walks
   * a copy taken while the thread was stopped, after resuming it, may serve such reads from the
   * live process when the copy lacks their page; every other read stays on the copy, so one
   * walk still sees one instant. The default is this memory itself.
   */
  default RemoteMemory stable() {
    return this;
  }

  /** Reads exactly {@code length} bytes or fails. */
  default byte[] readFully(long address, int length) throws MemoryReadException {
    if (length < 0 || length > MAX_READ) {
      throw new MemoryReadException(address, length, "length out of bounds (max " + MAX_READ + ")");
    }
    byte[] buffer = new byte[length];
    int done = 0;
    while (done < length) {
      int n = read(address + done, buffer, done, length - done);
      if (n <= 0) {
        throw new MemoryReadException(address + done, length - done, "short read");
      }
      done += n;
    }
    return buffer;
  }

  default long readLong(long address) throws MemoryReadException {
    return Bytes.getLong(readFully(address, 8), 0);
  }

  default int readInt(long address) throws MemoryReadException {
    return Bytes.getInt(readFully(address, 4), 0);
  }

  /**
   * Reads a NUL-terminated string of at most {@code maxLength} bytes as UTF-8 (malformed bytes
   * become U+FFFD). A string that does not end within the bound, or runs into unreadable memory
   * after its first byte, is cut there.
   */
  default String readCString(long address, int maxLength) throws MemoryReadException {
    if (maxLength <= 0 || maxLength > MAX_READ) {
      throw new MemoryReadException(address, maxLength, "string bound out of range");
    }
    byte[] buffer = new byte[maxLength];
    int filled = 0;
    int end = -1;
    while (end < 0 && filled < maxLength) {
      int n;
      try {
        n = read(address + filled, buffer, filled, maxLength - filled);
      } catch (MemoryReadException e) {
        if (filled == 0) {
          throw e;
        }
        break;
      }
      if (n <= 0) {
        break;
      }
      for (int i = filled; i < filled + n; i++) {
        if (buffer[i] == 0) {
          end = i;
          break;
        }
      }
      filled += n;
    }
    return new String(buffer, 0, end >= 0 ? end : filled, StandardCharsets.UTF_8);
  }
}
