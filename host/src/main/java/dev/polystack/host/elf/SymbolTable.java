package dev.polystack.host.elf;

import java.util.AbstractList;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.BitSet;
import java.util.Collections;
import java.util.List;
import java.util.Optional;

/**
 * An immutable, indexable symbol table (.dynsym or .symtab), held as columns: a parsed symbol
 * costs its fields, and its name is read from the file's string table when asked ({@link
 * SymbolNames}); names were most of the agent's heap (docs/benchmarks.md, "Where the agent's
 * memory and CPU go"). {@link #symbols()} makes {@link ElfSymbol} views on access.
 */
public final class SymbolTable {
  /** Offsets of the names in the string table; 0 for no name. */
  private final int[] nameOffsets;
  /** {@link SymbolNames#hash} of each name, for lookups by name without reading every name. */
  private final int[] nameHashes;
  private final SymbolNames names;
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
      return values.length;
    }
  };
  /**
   * Positions of the named symbols sorted by name hash, built on the first lookup by name: most
   * tables (a .symtab read to name addresses) are never looked up by name.
   */
  private volatile int[] byHash;

  private SymbolTable(Builder b) {
    int n = b.count;
    this.names = b.names;
    this.nameOffsets = Arrays.copyOf(b.nameOffsets, n);
    this.nameHashes = Arrays.copyOf(b.nameHashes, n);
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

  /** A table of the given symbols, in that order, their names held in memory. */
  SymbolTable(List<ElfSymbol> symbols) {
    this(builder(!symbols.isEmpty() && symbols.get(0).dynamic(), symbols));
  }

  private static Builder builder(boolean dynamic, List<ElfSymbol> symbols) {
    java.io.ByteArrayOutputStream table = new java.io.ByteArrayOutputStream();
    table.write(0);
    int[] offsets = new int[symbols.size()];
    for (int i = 0; i < offsets.length; i++) {
      byte[] name = symbols.get(i).name().getBytes(java.nio.charset.StandardCharsets.UTF_8);
      if (name.length > 0) {
        offsets[i] = table.size();
        table.write(name, 0, name.length);
        table.write(0);
      }
    }
    Builder b = new Builder(symbols.size(), dynamic, SymbolNames.inMemory(table.toByteArray()));
    for (int i = 0; i < offsets.length; i++) {
      ElfSymbol s = symbols.get(i);
      b.add(s.index(), offsets[i], SymbolNames.hash(s.name()), s.value(), s.size(), s.info(),
          s.other(), s.sectionIndex(), s.version(), s.hiddenVersion());
    }
    return b;
  }

  static SymbolTable empty() {
    return new SymbolTable(List.of());
  }

  /** Collects a table's symbols in order. */
  static final class Builder {
    private final boolean dynamic;
    private final SymbolNames names;
    private int[] nameOffsets;
    private int[] nameHashes;
    private long[] values;
    private long[] sizes;
    private int[] attributes;
    private String[] versions;
    private int[] indexes;
    private final BitSet hidden = new BitSet();
    private boolean anyVersion;
    private int count;

    Builder(int capacity, boolean dynamic, SymbolNames names) {
      int c = Math.max(1, capacity);
      this.dynamic = dynamic;
      this.names = java.util.Objects.requireNonNull(names, "names");
      this.nameOffsets = new int[c];
      this.nameHashes = new int[c];
      this.values = new long[c];
      this.sizes = new long[c];
      this.attributes = new int[c];
      this.versions = new String[c];
      this.indexes = new int[c];
    }

    /** {@code nameOffset} 0: no name; {@code nameHash} as {@link SymbolNames#hash}. */
    void add(int index, int nameOffset, int nameHash, long value, long size, int info, int other,
        int shndx, String version, boolean hiddenVersion) {
      if (index < 0 || nameOffset < 0) {
        throw new IllegalArgumentException("index " + index + ", name offset " + nameOffset);
      }
      if (count == values.length) {
        int c = count * 2;
        nameOffsets = Arrays.copyOf(nameOffsets, c);
        nameHashes = Arrays.copyOf(nameHashes, c);
        values = Arrays.copyOf(values, c);
        sizes = Arrays.copyOf(sizes, c);
        attributes = Arrays.copyOf(attributes, c);
        versions = Arrays.copyOf(versions, c);
        indexes = Arrays.copyOf(indexes, c);
      }
      nameOffsets[count] = nameOffset;
      nameHashes[count] = nameHash;
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
    return symbol(i, name(i));
  }

  private ElfSymbol symbol(int i, String name) {
    int a = attributes[i];
    return new ElfSymbol(indexes == null ? i : indexes[i], name, values[i], sizes[i],
        a & 0xff, (a >>> 8) & 0xff, a >>> 16, versions == null ? null : versions[i],
        hiddenVersions.get(i), dynamic);
  }

  /** Symbol {@code i}'s name, read from the string table (a string made on each call). */
  public String name(int i) {
    return nameOffsets[i] == 0 ? "" : names.at(nameOffsets[i]);
  }

  /** Whether symbol {@code i} has a name, without reading it. */
  public boolean hasName(int i) {
    return nameOffsets[i] != 0;
  }

  /** {@link SymbolNames#hash} of symbol {@code i}'s name: equal names hash equally. */
  int nameHash(int i) {
    return nameHashes[i];
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

  /** The symbols in order, as a view whose elements (and names) are made on access. */
  public List<ElfSymbol> symbols() {
    return view;
  }

  /**
   * The named symbols in order, made at once from one read of the string table: for a caller
   * that wants every name, where {@link #symbols()} would read the file once per symbol.
   */
  public List<ElfSymbol> namedSymbols() {
    byte[] table = names.all();
    List<ElfSymbol> out = new ArrayList<>();
    for (int i = 0; i < values.length; i++) {
      if (nameOffsets[i] != 0) {
        String name = SymbolNames.at(table, nameOffsets[i]);
        if (!name.isEmpty()) {
          out.add(symbol(i, name));
        }
      }
    }
    return out;
  }

  public int size() {
    return values.length;
  }

  public boolean isEmpty() {
    return values.length == 0;
  }

  private int[] byHash() {
    int[] m = byHash;
    if (m == null) {
      synchronized (this) {
        m = byHash;
        if (m == null) {
          int n = 0;
          long[] keyed = new long[values.length];
          for (int i = 0; i < values.length; i++) {
            if (nameOffsets[i] != 0) {
              keyed[n++] = (long) nameHashes[i] << 32 | i;
            }
          }
          Arrays.sort(keyed, 0, n);
          m = new int[n];
          for (int k = 0; k < n; k++) {
            m[k] = (int) keyed[k];
          }
          byHash = m;
        }
      }
    }
    return m;
  }

  /** Positions of the symbols named exactly {@code name}, in table order; null when none. */
  private int[] positions(String name) {
    int h = SymbolNames.hash(name);
    if (h == -1) {
      return null;
    }
    int[] m = byHash();
    int lo = 0;
    int hi = m.length;
    while (lo < hi) { // first position whose hash is >= h
      int mid = (lo + hi) >>> 1;
      if (nameHashes[m[mid]] < h) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    int[] found = null;
    for (int k = lo; k < m.length && nameHashes[m[k]] == h; k++) {
      if (name(m[k]).equals(name)) {
        found = found == null ? new int[] {m[k]} : append(found, m[k]);
      }
    }
    return found;
  }

  private static int[] append(int[] a, int v) {
    int[] more = Arrays.copyOf(a, a.length + 1);
    more[a.length] = v;
    return more;
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
    return Collections.unmodifiableList(at(positions(name)));
  }

  /** Lookup by {@code name}, {@code name@VERSION} or {@code name@@VERSION}. */
  public Optional<ElfSymbol> find(String spec) {
    int[] exact = spec.indexOf('@') > 0 ? positions(spec) : null;
    if (exact != null && spec.indexOf('@') > 0) {
      return Optional.of(symbol(exact[0])); // a literal name that contains '@' (seen in .symtab)
    }
    SymbolSpec parsed = SymbolSpec.parse(spec);
    return best(parsed, at(positions(parsed.name())));
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
