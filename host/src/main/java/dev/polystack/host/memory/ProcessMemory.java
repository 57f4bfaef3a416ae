package dev.polystack.host.memory;

import dev.polystack.host.ptrace.Tracer;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.Objects;

/** Reads the memory of another process. Implementations are thread-safe. */
public interface ProcessMemory {

  /** Default upper bound for a single read; larger requests are refused, never allocated. */
  int DEFAULT_MAX_READ = 16 << 20;

  /**
   * Reads up to {@code len} bytes. Returns the number of bytes actually read, which is less than
   * {@code len} when the range runs into unmapped memory (the readable prefix is delivered) and 0
   * when nothing at {@code address} is readable.
   *
   * @throws RemoteReadException if {@code len} exceeds the maximum, or the process cannot be read
   *     at all (gone, no permission)
   */
  int read(long address, byte[] dst, int off, int len) throws RemoteReadException;

  /** Like {@link #read} but fails unless all {@code len} bytes were read. */
  default void readFully(long address, byte[] dst, int off, int len) throws RemoteReadException {
    int n = read(address, dst, off, len);
    if (n != len) {
      throw new RemoteReadException(
          "remote memory not readable", address, len, n, RemoteReadException.Reason.UNREADABLE, null);
    }
  }

  default byte[] readBytes(long address, int len) throws RemoteReadException {
    byte[] b = new byte[checkLength(address, len)];
    readFully(address, b, 0, len);
    return b;
  }

  default long readLong(long address) throws RemoteReadException {
    byte[] b = new byte[8];
    readFully(address, b, 0, 8);
    return ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN).getLong();
  }

  default int readInt(long address) throws RemoteReadException {
    byte[] b = new byte[4];
    readFully(address, b, 0, 4);
    return ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN).getInt();
  }

  /** Reads a NUL-terminated UTF-8 string of at most {@code maxLen} bytes (excluding the NUL). */
  default String readCString(long address, int maxLen) throws RemoteReadException {
    byte[] b = new byte[checkLength(address, maxLen)];
    int n = read(address, b, 0, maxLen);
    for (int i = 0; i < n; i++) {
      if (b[i] == 0) {
        return new String(b, 0, i, StandardCharsets.UTF_8);
      }
    }
    throw new RemoteReadException(
        "no NUL terminator within limit", address, maxLen, n, RemoteReadException.Reason.UNREADABLE, null);
  }

  /**
   * Reads several ranges at once, for a caller that holds a thread stopped and wants one system
   * call instead of one per range. {@code dst[i]} receives up to its length in bytes from
   * {@code addresses[i]}; the result holds, per range, how many bytes were read (0 for an
   * unreadable range, fewer than asked when the range runs into unmapped memory). A range that
   * fails does not stop the others.
   *
   * @throws RemoteReadException if the process cannot be read at all
   */
  default int[] readScattered(long[] addresses, byte[][] dst) throws RemoteReadException {
    int[] got = new int[addresses.length];
    for (int i = 0; i < addresses.length; i++) {
      got[i] = read(addresses[i], dst[i], 0, dst[i].length);
    }
    return got;
  }

  /** The configured per-request maximum. */
  int maxReadBytes();

  /** Validates a length against {@link #maxReadBytes()} before anything is allocated for it. */
  default int checkLength(long address, int len) throws RemoteReadException {
    if (len < 0 || len > maxReadBytes()) {
      throw new RemoteReadException(
          "read of " + len + " bytes refused (maximum " + maxReadBytes() + ")",
          address, len, 0, RemoteReadException.Reason.TOO_LARGE, null);
    }
    return len;
  }

  static Builder builder(int pid) {
    return new Builder(pid);
  }

  /** process_vm_readv-only reader with default limits. */
  static ProcessMemory of(int pid) {
    return builder(pid).build();
  }

  final class Builder {
    private final int pid;
    private int maxReadBytes = DEFAULT_MAX_READ;
    private Tracer tracer;
    private int peekTid;

    private Builder(int pid) {
      if (pid <= 0) {
        throw new IllegalArgumentException("pid must be positive: " + pid);
      }
      this.pid = pid;
    }

    public Builder maxReadBytes(int max) {
      if (max <= 0) {
        throw new IllegalArgumentException("maxReadBytes must be positive: " + max);
      }
      this.maxReadBytes = max;
      return this;
    }

    /**
     * Enables the PTRACE_PEEKDATA fallback through {@code tracer} for thread {@code tid}, used when
     * process_vm_readv fails with EFAULT/EPERM/ENOSYS or is short. It only works while {@code
     * tid} is stopped under that tracer; otherwise the fallback fails and the original result
     * stands.
     */
    public Builder peekFallback(Tracer tracer, int tid) {
      this.tracer = Objects.requireNonNull(tracer, "tracer");
      this.peekTid = tid;
      return this;
    }

    public ProcessMemory build() {
      return new ProcessVmMemory(pid, maxReadBytes, tracer, peekTid);
    }
  }
}
