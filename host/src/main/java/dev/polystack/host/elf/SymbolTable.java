package dev.polystack.host.elf;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/** An immutable, indexable symbol table (.dynsym or .symtab). */
public final class SymbolTable {
  private final List<ElfSymbol> symbols;
  /**
   * Built on the first lookup by name: most tables (a .symtab read to name addresses) are never
   * looked up by name, and the index costs about 100 bytes per symbol.
   */
  private volatile Map<String, List<ElfSymbol>> byName;

  SymbolTable(List<ElfSymbol> symbols) {
    this.symbols = Collections.unmodifiableList(new ArrayList<>(symbols));
  }

  private Map<String, List<ElfSymbol>> byName() {
    Map<String, List<ElfSymbol>> m = byName;
    if (m == null) {
      synchronized (this) {
        m = byName;
        if (m == null) {
          m = new HashMap<>();
          for (ElfSymbol s : symbols) {
            if (!s.name().isEmpty()) {
              m.computeIfAbsent(s.name(), k -> new ArrayList<>(1)).add(s);
            }
          }
          byName = m;
        }
      }
    }
    return m;
  }

  static SymbolTable empty() {
    return new SymbolTable(List.of());
  }

  public List<ElfSymbol> symbols() {
    return symbols;
  }

  public int size() {
    return symbols.size();
  }

  public boolean isEmpty() {
    return symbols.isEmpty();
  }

  /** All entries named exactly {@code name} (every version). */
  public List<ElfSymbol> named(String name) {
    return Collections.unmodifiableList(byName().getOrDefault(name, List.of()));
  }

  /** Lookup by {@code name}, {@code name@VERSION} or {@code name@@VERSION}. */
  public Optional<ElfSymbol> find(String spec) {
    List<ElfSymbol> exact = byName().get(spec);
    if (exact != null && spec.indexOf('@') > 0) {
      return Optional.of(exact.get(0)); // a literal name that contains '@' (seen in .symtab)
    }
    SymbolSpec parsed = SymbolSpec.parse(spec);
    return best(parsed, byName().getOrDefault(parsed.name(), List.of()));
  }

  static Optional<ElfSymbol> best(SymbolSpec spec, List<ElfSymbol> candidates) {
    ElfSymbol best = null;
    int bestRank = 0;
    for (ElfSymbol s : candidates) {
      int r = spec.rank(s);
      if (r > bestRank) {
        best = s;
        bestRank = r;
      }
    }
    return Optional.ofNullable(best);
  }
}
