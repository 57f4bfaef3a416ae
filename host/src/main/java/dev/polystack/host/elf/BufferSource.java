package dev.polystack.host.elf;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/** Shared implementation for file mappings and byte arrays. */
final class BufferSource implements ElfSource {
  private final String description;
  private final ByteBuffer buffer;
  private final boolean memoryImage;
  private final long baseAddress;

  BufferSource(String description, ByteBuffer buffer, boolean memoryImage, long baseAddress) {
    this.description = description == null ? "<elf>" : description;
    this.buffer = buffer.asReadOnlyBuffer().order(ByteOrder.LITTLE_ENDIAN);
    this.memoryImage = memoryImage;
    this.baseAddress = baseAddress;
  }

  @Override
  public String description() {
    return description;
  }

  @Override
  public ByteBuffer contents() {
    return buffer.duplicate().order(ByteOrder.LITTLE_ENDIAN);
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
    return "ElfSource[" + description + (memoryImage ? ", image@0x" + Long.toHexString(baseAddress) : "") + "]";
  }
}
