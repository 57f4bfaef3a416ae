package dev.polystack.host.elf;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * Names for the stubs of the procedure linkage table, as perf and objdump write them
 * ({@code lua_pcall@plt}): a caller sampled in a stub is on its way into that import. The
 * symbol tables have no entry for the stubs, and without one a stub's PC fell to the nearest
 * size-0 symbol below it, {@code _init} in the .init section just before .plt.
 *
 * <p>x86-64 layout: relocation i of .rela.plt belongs to the 16-byte stub i of .plt.sec when
 * there is one (IBT), else to stub i + 1 of .plt (stub 0 is the resolver's). Relocations whose
 * symbol has no name (IRELATIVE) keep their slot but get no stub name. Anything that does not
 * fit the layout gives no names rather than wrong ones.
 */
final class PltSymbols {
  static final int RELA_SIZE = 24;
  static final int STUB_SIZE = 16;
  /** Bound on stubs read, far above any real import count. */
  static final int MAX_STUBS = 1 << 16;

  private PltSymbols() {}

  /** The stubs' symbols, sized, in .plt/.plt.sec; empty when the object has no usable PLT. */
  static List<ElfSymbol> read(ElfLayout layout, SymbolTable dynamicSymbols) {
    try {
      return readOrThrow(layout, dynamicSymbols);
    } catch (ElfParseException | RuntimeException e) {
      return List.of(); // an odd PLT costs its names, never the other symbols
    }
  }

  private static List<ElfSymbol> readOrThrow(ElfLayout layout, SymbolTable dynamicSymbols)
      throws ElfParseException {
    Optional<SectionHeader> rela = layout.section(".rela.plt");
    Optional<SectionHeader> sec = layout.section(".plt.sec");
    Optional<SectionHeader> plt = sec.isPresent() ? sec : layout.section(".plt");
    if (rela.isEmpty() || plt.isEmpty() || rela.get().entSize() != RELA_SIZE) {
      return List.of();
    }
    SectionHeader stubs = plt.get();
    long first = stubs.addr() + (sec.isPresent() ? 0 : STUB_SIZE);
    long[] range = layout.sectionRange(rela.get());
    long count = Math.min(range[1] / RELA_SIZE, MAX_STUBS);
    if (count * STUB_SIZE > stubs.size() - (first - stubs.addr())) {
      return List.of(); // more relocations than stubs: not the layout above
    }
    List<ElfSymbol> out = new ArrayList<>();
    for (int i = 0; i < count; i++) {
      long info = layout.view.u64(range[0] + (long) i * RELA_SIZE + 8, ".rela.plt entry");
      long symbol = info >>> 32;
      if (symbol <= 0 || symbol >= dynamicSymbols.size()) {
        continue;
      }
      String name = dynamicSymbols.name((int) symbol);
      if (name.isEmpty()) {
        continue;
      }
      out.add(new ElfSymbol(i, name + "@plt", first + (long) i * STUB_SIZE, STUB_SIZE,
          ElfSymbol.STT_FUNC, 0, stubs.index(), null, false, false));
    }
    return out;
  }
}
