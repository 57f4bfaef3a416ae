package dev.polystack.host.elf;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Objects;

/**
 * Bytes of one ELF object, either as laid out in a file or as mapped into a process.
 *
 * <p>The layout matters because a memory image is addressed by virtual address (offset = vaddr
 * minus the image's first load address) while a file is addressed through {@code p_offset}.
 */
public interface ElfSource {

  /** Refused above this size so that every offset fits in an {@code int} buffer index. */
  long MAX_SIZE = Integer.MAX_VALUE;

  /** Human readable origin, used in exception messages. */
  String description();

  /** A read-only little-endian view of the whole input; each call returns an independent view. */
  ByteBuffer contents();

  /** True when the bytes are a loaded image (vaddr-based layout) rather than a file. */
  boolean isMemoryImage();

  /** Address where offset 0 of a memory image was mapped; 0 for files. */
  long baseAddress();

  /** Maps a file read-only. Files larger than {@link #MAX_SIZE} are refused. */
  static ElfSource ofFile(Path path) throws ElfParseException {
    return ofFile(path, Objects.requireNonNull(path, "path").toString());
  }

  /**
   * Maps a file read-only and names it {@code description} in messages (for a file reached
   * through a descriptor path such as /proc/self/fd/N, whose name says nothing to the user).
   */
  static ElfSource ofFile(Path path, String description) throws ElfParseException {
    Objects.requireNonNull(path, "path");
    Objects.requireNonNull(description, "description");
    try (FileChannel ch = FileChannel.open(path, StandardOpenOption.READ)) {
      long size = ch.size();
      if (size > MAX_SIZE) {
        throw new ElfParseException(description + ": file of " + size
            + " bytes exceeds 2 GiB limit");
      }
      // The mapping outlives the channel; no close is needed by callers.
      ByteBuffer map = ch.map(FileChannel.MapMode.READ_ONLY, 0, size);
      return new BufferSource(description, map, false, 0);
    } catch (IOException e) {
      throw new ElfParseException(description + ": cannot read: " + e.getMessage(), e);
    }
  }

  /** Wraps file contents held in memory (no copy is made; do not mutate the array later). */
  static ElfSource ofFileBytes(byte[] bytes, String description) {
    Objects.requireNonNull(bytes, "bytes");
    return new BufferSource(description, ByteBuffer.wrap(bytes), false, 0);
  }

  /**
   * Wraps a loaded image such as the vDSO copied out of another process, where offset 0 is the
   * ELF header mapped at {@code baseAddress}.
   */
  static ElfSource ofImage(byte[] image, long baseAddress, String description) {
    Objects.requireNonNull(image, "image");
    return new BufferSource(description, ByteBuffer.wrap(image), true, baseAddress);
  }
}
