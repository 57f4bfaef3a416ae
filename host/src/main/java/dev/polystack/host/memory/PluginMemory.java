package dev.polystack.host.memory;

import dev.polystack.plugin.api.MemoryReadException;

/** The host's remote memory as plug-ins see it (plugin-api contract: fail if nothing is read). */
public final class PluginMemory implements dev.polystack.plugin.api.RemoteMemory {
  private final ProcessMemory memory;

  public PluginMemory(ProcessMemory memory) {
    this.memory = java.util.Objects.requireNonNull(memory, "memory");
  }

  @Override
  public int read(long address, byte[] dst, int offset, int length) throws MemoryReadException {
    if (length > MAX_READ) {
      throw new MemoryReadException(address, length, "longer than " + MAX_READ + " bytes");
    }
    int n;
    try {
      n = memory.read(address, dst, offset, length);
    } catch (RemoteReadException e) {
      throw new MemoryReadException(address, length, e.getMessage());
    }
    if (n <= 0 && length > 0) {
      throw new MemoryReadException(address, length, "unreadable");
    }
    return n;
  }
}
