package dev.polystack.host.elf;

import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * Address-to-symbol index over defined function and object symbols of .symtab (preferred, it
 * has local symbols) merged with .dynsym and the PLT stubs' names ({@code name@plt}). Addresses are link-time: subtract the load bias first.
 *
 * <p>Matching rules:
 * <ol>
 *   <li>A sized symbol matches {@code [value, value + size)} only; an address past its end is not
 *       attributed to it. If sized symbols nest, the one starting closest below the address wins.
 *   <li>A size-0 symbol (hand-written assembly, some linker symbols) matches its exact address.
 *   <li>Otherwise, as a fallback, the nearest size-0 symbol below the address matches up to the
 *       next symbol start, because such symbols usually label code that runs until the next one.
 *       A sized symbol that ends before the address blocks this fallback.
 * </ol>
 */
public final class Symbolizer {
  private final List<ElfSymbol> sorted;
  /** prefixMaxEnd[i]: greatest end of any sized symbol among sorted[0..i], to bound backward scans. */
  private final long[] prefixMaxEnd;

  /** @param pltSymbols the import stubs' names ({@link PltSymbols}) */
  Symbolizer(SymbolTable staticSymbols, SymbolTable dynamicSymbols, SymbolTable pltSymbols) {
    List<ElfSymbol> all = new ArrayList<>();
    Set<Seen> seen = new HashSet<>();
    addAll(staticSymbols, all, seen);
    addAll(dynamicSymbols, all, seen);
    addAll(pltSymbols, all, seen);
    // Primitive comparisons: a libjvm.so has ~100k symbols, and boxing each compared value
    // was most of what the agent allocated while describing processes (docs/benchmarks.md).
    all.sort(BY_ADDRESS_THEN_LARGEST);
    this.sorted = Collections.unmodifiableList(all);
    this.prefixMaxEnd = new long[all.size()];
    long max = 0;
    for (int i = 0; i < all.size(); i++) {
      ElfSymbol s = all.get(i);
      long end = s.value() + s.size();
      if (Long.compareUnsigned(end, s.value()) < 0) {
        end = -1L; // saturate absurd sizes instead of wrapping
      }
      if (s.size() != 0 && Long.compareUnsigned(end, max) > 0) {
        max = end;
      }
      prefixMaxEnd[i] = max;
    }
  }

  private static final Comparator<ElfSymbol> BY_ADDRESS_THEN_LARGEST = (a, b) -> {
    int c = Long.compareUnsigned(a.value(), b.value());
    return c != 0 ? c : Long.compare(b.size(), a.size());
  };

  /** A name and address; the name is shared with the symbol, never copied. */
  private record Seen(String name, long value) {}

  private static void addAll(SymbolTable table, List<ElfSymbol> out, Set<Seen> seen) {
    for (ElfSymbol s : table.symbols()) {
      int t = s.type();
      boolean wanted = t == ElfSymbol.STT_FUNC || t == ElfSymbol.STT_GNU_IFUNC || t == ElfSymbol.STT_OBJECT;
      if (!wanted || !s.isDefined() || s.sectionIndex() == ElfSymbol.SHN_ABS && s.value() == 0 || s.name().isEmpty()) {
        continue;
      }
      // .dynsym repeats .symtab entries; keep the first (static) one.
      if (seen.add(new Seen(s.name(), s.value()))) {
        out.add(s);
      }
    }
  }

  /** All indexed symbols, sorted by address. */
  public List<ElfSymbol> symbols() {
    return sorted;
  }

  public Optional<SymbolMatch> lookup(long address) {
    int i = lastAtOrBelow(address);
    if (i < 0) {
      return Optional.empty();
    }
    // Sized containment: scan back only while some earlier symbol could still reach the address.
    for (int j = i; j >= 0 && Long.compareUnsigned(prefixMaxEnd[j], address) > 0; j--) {
      ElfSymbol s = sorted.get(j);
      if (s.size() != 0 && s.contains(address)) {
        return Optional.of(new SymbolMatch(s, address - s.value()));
      }
    }
    long start = sorted.get(i).value();
    ElfSymbol zero = null;
    for (int j = i; j >= 0 && sorted.get(j).value() == start; j--) {
      ElfSymbol s = sorted.get(j);
      if (s.size() != 0) {
        return Optional.empty(); // a sized symbol starts here but ended before the address
      }
      zero = s;
    }
    return zero == null ? Optional.empty() : Optional.of(new SymbolMatch(zero, address - start));
  }

  private int lastAtOrBelow(long address) {
    int lo = 0;
    int hi = sorted.size() - 1;
    int found = -1;
    while (lo <= hi) {
      int mid = (lo + hi) >>> 1;
      if (Long.compareUnsigned(sorted.get(mid).value(), address) <= 0) {
        found = mid;
        lo = mid + 1;
      } else {
        hi = mid - 1;
      }
    }
    return found;
  }
}
