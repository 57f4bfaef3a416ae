package dev.polystack.host.elf;

import java.util.Objects;

/** Input held in memory: file contents or a loaded image copied out of a process. */
final class BufferSource implements ElfSource {
  private final String description;
  private final byte[] bytes;
  private final boolean memoryImage;
  private final long baseAddress;

  BufferSource(String description, byte[] bytes, boolean memoryImage, long baseAddress) {
    this.description = description == null ? "<elf>" : description;
    this.bytes = bytes;
    this.memoryImage = memoryImage;
    this.baseAddress = baseAddress;
  }

  /** The backing array itself, for {@link ByteView}'s direct reads; never handed out. */
  byte[] array() {
    return bytes;
  }

  @Override
  public String description() {
    return description;
  }

  @Override
  public long size() {
    return bytes.length;
  }

  @Override
  public int read(long offset, byte[] dst, int dstOffset, int length) {
    Objects.checkFromIndexSize(dstOffset, length, dst.length);
    if (offset < 0 || offset >= bytes.length) {
      return 0;
    }
    int n = (int) Math.min(length, bytes.length - offset);
    System.arraycopy(bytes, (int) offset, dst, dstOffset, n);
    return n;
  }

  @Override
  public byte[] readAll() {
    return bytes.clone();
  }

  @Override
  public boolean isMemoryImage() {
    return memoryImage;
  }

  @Override
  public long baseAddress() {
    return baseAddress;
  }

  @Override
  public String toString() {
    return "ElfSource[" + description
        + (memoryImage ? ", image@0x" + Long.toHexString(baseAddress) : "") + "]";
  }
}
