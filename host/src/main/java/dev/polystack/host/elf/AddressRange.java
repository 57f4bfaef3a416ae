package dev.polystack.host.elf;

/** Half-open virtual address range {@code [start, end)}. */
public record AddressRange(long start, long end) {
  public AddressRange {
    if (Long.compareUnsigned(end, start) < 0) {
      throw new IllegalArgumentException("end < start");
    }
  }

  public boolean contains(long address) {
    return Long.compareUnsigned(address, start) >= 0 && Long.compareUnsigned(address, end) < 0;
  }

  public long length() {
    return end - start;
  }
}
