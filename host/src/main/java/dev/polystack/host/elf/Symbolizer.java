package dev.polystack.host.elf;

import java.util.AbstractList;
import java.util.Arrays;
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
  /** Bits of a reference that hold the symbol's position in its table. */
  private static final int POSITION_BITS = 29;
  private static final int POSITION_MASK = (1 << POSITION_BITS) - 1;

  /** The static, dynamic and PLT tables; a reference names one of them and a position in it. */
  private final SymbolTable[] tables;
  /** References to the indexed symbols, sorted by address, then largest first. */
  private final int[] sorted;
  /** prefixMaxEnd[i]: greatest end of any sized symbol among sorted[0..i], to bound backward scans. */
  private final long[] prefixMaxEnd;

  /** @param pltSymbols the import stubs' names ({@link PltSymbols}) */
  Symbolizer(SymbolTable staticSymbols, SymbolTable dynamicSymbols, SymbolTable pltSymbols) {
    this.tables = new SymbolTable[] {staticSymbols, dynamicSymbols, pltSymbols};
    int total = 0;
    for (SymbolTable t : tables) {
      total += t.size();
    }
    Integer[] refs = new Integer[total];
    int n = 0;
    Set<Seen> seen = new HashSet<>();
    for (int t = 0; t < tables.length; t++) {
      n = addAll(t, refs, n, seen);
    }
    // Comparisons read primitive columns: a libjvm.so has ~100k symbols, and boxing each
    // compared address was most of what the agent allocated while describing processes
    // (docs/benchmarks.md).
    Arrays.sort(refs, 0, n, byAddressThenLargest());
    this.sorted = new int[n];
    this.prefixMaxEnd = new long[n];
    long max = 0;
    for (int i = 0; i < n; i++) {
      int r = refs[i];
      sorted[i] = r;
      long value = value(r);
      long end = value + size(r);
      if (Long.compareUnsigned(end, value) < 0) {
        end = -1L; // saturate absurd sizes instead of wrapping
      }
      if (size(r) != 0 && Long.compareUnsigned(end, max) > 0) {
        max = end;
      }
      prefixMaxEnd[i] = max;
    }
  }

  private Comparator<Integer> byAddressThenLargest() {
    return (a, b) -> {
      int c = Long.compareUnsigned(value(a), value(b));
      return c != 0 ? c : Long.compare(size(b), size(a));
    };
  }

  /**
   * A symbol by its name's hash, address and size: .dynsym repeats .symtab entries, and names
   * are not held to compare (two different names alike in all three would lose one alias of
   * the same code).
   */
  private record Seen(int nameHash, long value, long size) {}

  private int addAll(int t, Integer[] out, int n, Set<Seen> seen) {
    SymbolTable table = tables[t];
    for (int i = 0; i < table.size(); i++) {
      int type = table.type(i);
      boolean wanted = type == ElfSymbol.STT_FUNC || type == ElfSymbol.STT_GNU_IFUNC
          || type == ElfSymbol.STT_OBJECT;
      int section = table.sectionIndex(i);
      if (!wanted || section == ElfSymbol.SHN_UNDEF
          || section == ElfSymbol.SHN_ABS && table.value(i) == 0 || !table.hasName(i)) {
        continue;
      }
      // .dynsym repeats .symtab entries; keep the first (static) one.
      if (seen.add(new Seen(table.nameHash(i), table.value(i), table.size(i)))) {
        out[n++] = t << POSITION_BITS | i;
      }
    }
    return n;
  }

  private long value(int ref) {
    return tables[ref >>> POSITION_BITS].value(ref & POSITION_MASK);
  }

  private long size(int ref) {
    return tables[ref >>> POSITION_BITS].size(ref & POSITION_MASK);
  }

  private ElfSymbol symbol(int ref) {
    return tables[ref >>> POSITION_BITS].symbol(ref & POSITION_MASK);
  }

  /** All indexed symbols, sorted by address (made on access). */
  public List<ElfSymbol> symbols() {
    return new AbstractList<>() {
      @Override
      public ElfSymbol get(int i) {
        return symbol(sorted[i]);
      }

      @Override
      public int size() {
        return sorted.length;
      }
    };
  }

  public Optional<SymbolMatch> lookup(long address) {
    int i = lastAtOrBelow(address);
    if (i < 0) {
      return Optional.empty();
    }
    // Sized containment: scan back only while some earlier symbol could still reach the address.
    for (int j = i; j >= 0 && Long.compareUnsigned(prefixMaxEnd[j], address) > 0; j--) {
      int r = sorted[j];
      long value = value(r);
      long size = size(r);
      // ElfSymbol.contains, on the columns
      if (size != 0 && Long.compareUnsigned(address, value) >= 0
          && Long.compareUnsigned(address - value, size) < 0) {
        return Optional.of(new SymbolMatch(symbol(r), address - value));
      }
    }
    long start = value(sorted[i]);
    int zero = -1;
    for (int j = i; j >= 0 && value(sorted[j]) == start; j--) {
      if (size(sorted[j]) != 0) {
        return Optional.empty(); // a sized symbol starts here but ended before the address
      }
      zero = sorted[j];
    }
    return zero < 0 ? Optional.empty()
        : Optional.of(new SymbolMatch(symbol(zero), address - start));
  }

  private int lastAtOrBelow(long address) {
    int lo = 0;
    int hi = sorted.length - 1;
    int found = -1;
    while (lo <= hi) {
      int mid = (lo + hi) >>> 1;
      if (Long.compareUnsigned(value(sorted[mid]), address) <= 0) {
        found = mid;
        lo = mid + 1;
      } else {
        hi = mid - 1;
      }
    }
    return found;
  }
}
