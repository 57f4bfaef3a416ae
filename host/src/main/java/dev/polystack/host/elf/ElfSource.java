package dev.polystack.host.elf;

import dev.polystack.host.sys.DescriptorLimit;
import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Objects;

/**
 * Bytes of one ELF object, either as laid out in a file or as mapped into a process.
 *
 * <p>The layout matters because a memory image is addressed by virtual address (offset = vaddr
 * minus the image's first load address) while a file is addressed through {@code p_offset}.
 *
 * <p>Files are read with positional reads, never mapped: a target can truncate a file it owns
 * while polystack parses it, and a read past the new end of a mapping is a SIGBUS that the JVM
 * turns into an {@link InternalError} at an unpredictable later point. A short read is an
 * ordinary {@link ElfParseException} instead (docs/reliability.md, "Root safety").
 */
public interface ElfSource {

  /** Refused above this size so that every offset fits in an {@code int} buffer index. */
  long MAX_SIZE = Integer.MAX_VALUE;

  /** Human readable origin, used in exception messages. */
  String description();

  /** Bytes in the input; for a file, its size when it was opened. */
  long size();

  /**
   * Copies up to {@code length} bytes from input offset {@code offset} into {@code dst}; returns
   * how many were copied: fewer than asked only past {@link #size()}, or when a file shrank after
   * it was opened.
   */
  int read(long offset, byte[] dst, int dstOffset, int length) throws IOException;

  /** True when the bytes are a loaded image (vaddr-based layout) rather than a file. */
  boolean isMemoryImage();

  /** Address where offset 0 of a memory image was mapped; 0 for files. */
  long baseAddress();

  /**
   * Releases a file's descriptor now rather than when this source becomes unreachable; later
   * reads fail. Nothing to release for bytes held in memory.
   */
  default void close() {}

  /** Every byte of the input (e.g. to copy a module into a snapshot). */
  default byte[] readAll() throws ElfParseException {
    long size = size();
    if (size > Integer.MAX_VALUE - 8) {
      throw new ElfParseException(description() + ": " + size + " bytes do not fit in memory");
    }
    byte[] out = new byte[(int) size];
    int n;
    try {
      n = read(0, out, 0, out.length);
    } catch (IOException e) {
      throw new ElfParseException(description() + ": cannot read: " + e.getMessage(), e);
    }
    if (n != out.length) {
      throw new ElfParseException(description() + ": file shrank from " + size + " to " + n
          + " bytes while it was read");
    }
    return out;
  }

  /**
   * Opens a file for reading. Files larger than {@link #MAX_SIZE} are refused. The descriptor is
   * closed when the source becomes unreachable (the JDK's channel cleaner).
   */
  static ElfSource ofFile(Path path) throws ElfParseException {
    return ofFile(path, Objects.requireNonNull(path, "path").toString());
  }

  /**
   * Opens a file for reading and names it {@code description} in messages (for a file reached
   * through a descriptor path such as /proc/self/fd/N, whose name says nothing to the user).
   */
  static ElfSource ofFile(Path path, String description) throws ElfParseException {
    Objects.requireNonNull(path, "path");
    Objects.requireNonNull(description, "description");
    FileChannel ch;
    try {
      ch = DescriptorLimit.open(() -> FileChannel.open(path, StandardOpenOption.READ));
    } catch (IOException e) {
      throw new ElfParseException(description + ": cannot read: " + e.getMessage(), e);
    }
    try {
      return ofChannel(ch, description);
    } catch (ElfParseException | RuntimeException e) {
      closeQuietly(ch);
      throw e;
    }
  }

  /**
   * Reads through an open channel the caller owns (and may close, after which reads fail with an
   * {@link ElfParseException}).
   */
  static ElfSource ofChannel(FileChannel channel, String description) throws ElfParseException {
    Objects.requireNonNull(channel, "channel");
    Objects.requireNonNull(description, "description");
    long size;
    try {
      size = channel.size();
    } catch (IOException e) {
      throw new ElfParseException(description + ": cannot read: " + e.getMessage(), e);
    }
    if (size > MAX_SIZE) {
      throw new ElfParseException(description + ": file of " + size
          + " bytes exceeds 2 GiB limit");
    }
    return new FileSource(description, channel, size);
  }

  /** Wraps file contents held in memory (no copy is made; do not mutate the array later). */
  static ElfSource ofFileBytes(byte[] bytes, String description) {
    Objects.requireNonNull(bytes, "bytes");
    return new BufferSource(description, bytes, false, 0);
  }

  /**
   * Wraps a loaded image such as the vDSO copied out of another process, where offset 0 is the
   * ELF header mapped at {@code baseAddress}.
   */
  static ElfSource ofImage(byte[] image, long baseAddress, String description) {
    Objects.requireNonNull(image, "image");
    return new BufferSource(description, image, true, baseAddress);
  }

  private static void closeQuietly(FileChannel ch) {
    try {
      ch.close();
    } catch (IOException ignored) {
      // nothing was read through it
    }
  }
}
