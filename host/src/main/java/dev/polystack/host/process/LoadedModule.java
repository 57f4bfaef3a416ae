package dev.polystack.host.process;

import dev.polystack.host.elf.ElfFile;
import dev.polystack.host.unwind.ElfUnwindModule;
import java.util.Objects;

/**
 * A module of the target that the host opened: its address range, bias, CFI and symbols.
 *
 * @param start first mapped address
 * @param end end of the last mapping (exclusive)
 * @param fileOffset file offset mapped at {@code start}
 * @param path file path or {@code [vdso]}
 * @param buildId GNU build id or empty
 */
public record LoadedModule(
    long start,
    long end,
    long fileOffset,
    String path,
    String buildId,
    ElfFile elf,
    ElfUnwindModule unwind,
    NativeSymbols symbols) {

  public LoadedModule {
    Objects.requireNonNull(path, "path");
    Objects.requireNonNull(buildId, "buildId");
    Objects.requireNonNull(elf, "elf");
    Objects.requireNonNull(unwind, "unwind");
    Objects.requireNonNull(symbols, "symbols");
  }

  public long bias() {
    return unwind.bias();
  }

  public boolean contains(long address) {
    return Long.compareUnsigned(address, start) >= 0 && Long.compareUnsigned(address, end) < 0;
  }
}
