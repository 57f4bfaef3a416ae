package dev.polystack.host.elf;

import java.util.AbstractList;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.BitSet;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * An immutable, indexable symbol table (.dynsym or .symtab), held as columns: a parsed symbol
 * costs its fields and a shared name rather than an object of its own (symbol tables were most
 * of the agent's heap; docs/benchmarks.md, "Where the agent's memory and CPU go").
 * {@link #symbols()} makes {@link ElfSymbol} views on access.
 */
public final class SymbolTable {
  private final String[] names;
  private final long[] values;
  private final long[] sizes;
  /** st_info, st_other and st_shndx: {@code info | other << 8 | shndx << 16}. */
  private final int[] attributes;
  /** Versions by symbol; null when no symbol has one. */
  private final String[] versions;
  private final BitSet hiddenVersions;
  /** The symbol's index in its ELF table, or null when it is the position here. */
  private final int[] indexes;
  private final boolean dynamic;
  private final List<ElfSymbol> view = new AbstractList<>() {
    @Override
    public ElfSymbol get(int i) {
      return symbol(i);
    }

    @Override
    public int size() {
      return names.length;
    }
  };
  /**
   * Built on the first lookup by name: most tables (a .symtab read to name addresses) are never
   * looked up by name, and the index costs about 100 bytes per symbol.
   */
  private volatile Map<String, int[]> byName;

  private SymbolTable(Builder b) {
    int n = b.count;
    this.names = Arrays.copyOf(b.names, n);
    this.values = Arrays.copyOf(b.values, n);
    this.sizes = Arrays.copyOf(b.sizes, n);
    this.attributes = Arrays.copyOf(b.attributes, n);
    this.versions = b.anyVersion ? Arrays.copyOf(b.versions, n) : null;
    this.hiddenVersions = (BitSet) b.hidden.clone();
    boolean sequential = true;
    for (int i = 0; i < n && sequential; i++) {
      sequential = b.indexes[i] == i;
    }
    this.indexes = sequential ? null : Arrays.copyOf(b.indexes, n);
    this.dynamic = b.dynamic;
  }

  /** A table of the given symbols, in that order. */
  SymbolTable(List<ElfSymbol> symbols) {
    this(builder(symbols.size(), !symbols.isEmpty() && symbols.get(0).dynamic(), symbols));
  }

  private static Builder builder(int capacity, boolean dynamic, List<ElfSymbol> symbols) {
    Builder b = new Builder(capacity, dynamic);
    for (ElfSymbol s : symbols) {
      b.add(s.index(), s.name(), s.value(), s.size(), s.info(), s.other(), s.sectionIndex(),
          s.version(), s.hiddenVersion());
    }
    return b;
  }

  static SymbolTable empty() {
    return new SymbolTable(List.of());
  }

  /** Collects a table's symbols in order. */
  static final class Builder {
    private final boolean dynamic;
    private String[] names;
    private long[] values;
    private long[] sizes;
    private int[] attributes;
    private String[] versions;
    private int[] indexes;
    private final BitSet hidden = new BitSet();
    private boolean anyVersion;
    private int count;

    Builder(int capacity, boolean dynamic) {
      int c = Math.max(1, capacity);
      this.dynamic = dynamic;
      this.names = new String[c];
      this.values = new long[c];
      this.sizes = new long[c];
      this.attributes = new int[c];
      this.versions = new String[c];
      this.indexes = new int[c];
    }

    void add(int index, String name, long value, long size, int info, int other, int shndx,
        String version, boolean hiddenVersion) {
      if (index < 0) {
        throw new IllegalArgumentException("index < 0");
      }
      if (count == names.length) {
        int c = count * 2;
        names = Arrays.copyOf(names, c);
        values = Arrays.copyOf(values, c);
        sizes = Arrays.copyOf(sizes, c);
        attributes = Arrays.copyOf(attributes, c);
        versions = Arrays.copyOf(versions, c);
        indexes = Arrays.copyOf(indexes, c);
      }
      names[count] = java.util.Objects.requireNonNull(name, "name");
      values[count] = value;
      sizes[count] = size;
      attributes[count] = (info & 0xff) | (other & 0xff) << 8 | (shndx & 0xffff) << 16;
      if (version != null && !version.isEmpty()) {
        versions[count] = version;
        anyVersion = true;
      }
      hidden.set(count, hiddenVersion);
      indexes[count] = index;
      count++;
    }

    SymbolTable build() {
      return new SymbolTable(this);
    }
  }

  /** Symbol {@code i} as an object (made on each call). */
  public ElfSymbol symbol(int i) {
    int a = attributes[i];
    return new ElfSymbol(indexes == null ? i : indexes[i], names[i], values[i], sizes[i],
        a & 0xff, (a >>> 8) & 0xff, a >>> 16, versions == null ? null : versions[i],
        hiddenVersions.get(i), dynamic);
  }

  public String name(int i) {
    return names[i];
  }

  public long value(int i) {
    return values[i];
  }

  public long size(int i) {
    return sizes[i];
  }

  public int type(int i) {
    return attributes[i] & 0xf;
  }

  public int sectionIndex(int i) {
    return attributes[i] >>> 16;
  }

  /** The symbols in order, as a view whose elements are made on access. */
  public List<ElfSymbol> symbols() {
    return view;
  }

  public int size() {
    return names.length;
  }

  public boolean isEmpty() {
    return names.length == 0;
  }

  private Map<String, int[]> byName() {
    Map<String, int[]> m = byName;
    if (m == null) {
      synchronized (this) {
        m = byName;
        if (m == null) {
          m = new HashMap<>();
          for (int i = 0; i < names.length; i++) {
            if (!names[i].isEmpty()) {
              int[] at = m.get(names[i]);
              if (at == null) {
                m.put(names[i], new int[] {i});
              } else {
                int[] more = Arrays.copyOf(at, at.length + 1);
                more[at.length] = i;
                m.put(names[i], more);
              }
            }
          }
          byName = m;
        }
      }
    }
    return m;
  }

  private List<ElfSymbol> at(int[] positions) {
    if (positions == null) {
      return List.of();
    }
    List<ElfSymbol> out = new ArrayList<>(positions.length);
    for (int i : positions) {
      out.add(symbol(i));
    }
    return out;
  }

  /** All entries named exactly {@code name} (every version). */
  public List<ElfSymbol> named(String name) {
    return Collections.unmodifiableList(at(byName().get(name)));
  }

  /** Lookup by {@code name}, {@code name@VERSION} or {@code name@@VERSION}. */
  public Optional<ElfSymbol> find(String spec) {
    int[] exact = byName().get(spec);
    if (exact != null && spec.indexOf('@') > 0) {
      return Optional.of(symbol(exact[0])); // a literal name that contains '@' (seen in .symtab)
    }
    SymbolSpec parsed = SymbolSpec.parse(spec);
    return best(parsed, at(byName().get(parsed.name())));
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
