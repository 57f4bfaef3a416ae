package dev.polystack.host.elf;

import java.nio.file.Path;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;

/**
 * Read-only view of one ELF64 little-endian object, from a file or an in-memory image.
 *
 * <p>Headers, segments and sections are parsed by {@link #open}; everything else is decoded on
 * first use and memoized (including failures). All methods report malformed input only as
 * {@link ElfParseException}. Instances are immutable from the outside and safe to share.
 *
 * <p>Addresses taken and returned by symbol and frame methods are link-time virtual addresses.
 * For ET_DYN objects (PIE, shared libraries, vDSO) runtime addresses must first have the load bias
 * subtracted; for ET_EXEC the bias is 0.
 */
public final class ElfFile implements AutoCloseable {
  private final ElfSource source;
  private final ElfLayout layout;
  private final Lazy<Optional<DynamicSection>> dynamic;
  private final Lazy<DynamicSymbols> dynamicSymbols;
  private final Lazy<SymbolTable> staticSymbols;
  private final Lazy<Optional<BuildId>> buildId;
  private final Lazy<Optional<DebugLink>> debugLink;
  private final Lazy<Optional<FrameTable>> ehFrame;
  private final Lazy<Optional<FrameTable>> debugFrame;
  private final Lazy<Symbolizer> symbolizer;

  private ElfFile(ElfSource source, ElfLayout layout) {
    this.source = source;
    this.layout = layout;
    this.dynamic = new Lazy<>(() -> DynamicSection.parse(layout));
    this.dynamicSymbols = new Lazy<>(() -> DynamicSymbols.read(layout, dynamic.get()));
    this.staticSymbols = new Lazy<>(() -> DynamicSymbols.readStatic(layout));
    this.buildId = new Lazy<>(() -> Notes.buildId(layout));
    this.debugLink = new Lazy<>(() -> Notes.debugLink(layout));
    this.ehFrame = new Lazy<>(() -> Frames.ehFrame(layout));
    this.debugFrame = new Lazy<>(() -> Frames.debugFrame(layout));
    this.symbolizer = new Lazy<>(() -> new Symbolizer(staticSymbols.get(),
        dynamicSymbols.get().table,
        new SymbolTable(PltSymbols.read(layout, dynamicSymbols.get().table))));
  }

  /** Parses the ELF header, program headers and section headers (with names). */
  public static ElfFile open(ElfSource source) throws ElfParseException {
    Objects.requireNonNull(source, "source");
    return new ElfFile(source, ElfLayout.parse(source));
  }

  /**
   * {@code open(ElfSource.ofFile(path))}; a file refused as no ELF (or cut short) gives its
   * descriptor back at once rather than when it is collected.
   */
  public static ElfFile open(Path path) throws ElfParseException {
    ElfSource source = ElfSource.ofFile(path);
    try {
      return open(source);
    } catch (ElfParseException | RuntimeException e) {
      source.close();
      throw e;
    }
  }

  /**
   * Releases the file's descriptor now, for a caller that knows nothing else uses this file;
   * otherwise it is released when the file becomes unreachable. Later reads fail.
   */
  @Override
  public void close() {
    source.close();
  }

  public ElfSource source() {
    return source;
  }

  public ElfHeader header() {
    return layout.header;
  }

  public List<ProgramHeader> programHeaders() {
    return layout.programHeaders;
  }

  /** Section headers; empty when absent (stripped of them, or not mapped in a memory image). */
  public List<SectionHeader> sections() {
    return layout.sections;
  }

  public Optional<SectionHeader> section(String name) {
    return layout.section(name);
  }

  /** Input offset backing link-time address {@code vaddr}, through the PT_LOAD segments. */
  public OptionalLong virtualAddressToOffset(long vaddr) {
    return layout.vaddrToOffset(vaddr);
  }

  /** Link-time address of input offset {@code offset}, if a PT_LOAD covers it. */
  public OptionalLong offsetToVirtualAddress(long offset) {
    return layout.offsetToVaddr(offset);
  }

  /** Link-time ranges of the executable PT_LOAD segments. */
  public List<AddressRange> executableRanges() {
    return layout.executableRanges();
  }

  /**
   * Link-time address of input offset 0 / the first page of the lowest PT_LOAD. A mapping of the
   * object at runtime address {@code A} for that page has load bias {@code A - imageStartAddress()}.
   */
  public long imageStartAddress() {
    return layout.imageStartVaddr;
  }

  /**
   * For memory images: runtime base address minus {@link #imageStartAddress()}; add it to link-time
   * addresses to get runtime ones. Always 0 for file sources (the bias is a property of a mapping).
   */
  public long loadBias() {
    return layout.loadBias();
  }

  public Optional<DynamicSection> dynamicSection() throws ElfParseException {
    return dynamic.get();
  }

  /** Dynamic symbols with versions, located through the dynamic segment when present. */
  public SymbolTable dynamicSymbols() throws ElfParseException {
    return dynamicSymbols.get().table;
  }

  /** .symtab symbols; empty for stripped objects and section-less images. */
  public SymbolTable staticSymbols() throws ElfParseException {
    return staticSymbols.get();
  }

  /**
   * Looks up a dynamic symbol by {@code name}, {@code name@VERSION} or {@code name@@VERSION} via
   * the GNU hash table, else the SysV one, else a linear scan. A plain name prefers the default
   * version.
   */
  public Optional<ElfSymbol> findDynamicSymbol(String spec) throws ElfParseException {
    Objects.requireNonNull(spec, "spec");
    return dynamicSymbols.get().lookup(spec);
  }

  /** As {@link #findDynamicSymbol(String)} using one specific hash table; empty if it is absent. */
  public Optional<ElfSymbol> findDynamicSymbol(String spec, HashKind kind) throws ElfParseException {
    Objects.requireNonNull(spec, "spec");
    Objects.requireNonNull(kind, "kind");
    return dynamicSymbols.get().lookup(spec, kind);
  }

  /** Dynamic symbol count implied by a hash table (DT_HASH nchain, or GNU hash chain walk). */
  public OptionalLong dynamicSymbolCount(HashKind kind) throws ElfParseException {
    Objects.requireNonNull(kind, "kind");
    return dynamicSymbols.get().count(kind);
  }

  /** Searches .symtab then .dynsym by name or versioned name, without hash tables. */
  public Optional<ElfSymbol> findSymbol(String spec) throws ElfParseException {
    Optional<ElfSymbol> s = staticSymbols.get().find(spec);
    return s.isPresent() ? s : dynamicSymbols.get().table.find(spec);
  }

  public Optional<BuildId> buildId() throws ElfParseException {
    return buildId.get();
  }

  public Optional<DebugLink> debugLink() throws ElfParseException {
    return debugLink.get();
  }

  /** .eh_frame (with its .eh_frame_hdr search table when present). */
  public Optional<FrameTable> ehFrame() throws ElfParseException {
    return ehFrame.get();
  }

  public Optional<FrameTable> debugFrame() throws ElfParseException {
    return debugFrame.get();
  }

  /** FDE covering link-time {@code pc}, from .eh_frame, else .debug_frame. */
  public Optional<Fde> findFde(long pc) throws ElfParseException {
    Optional<FrameTable> eh = ehFrame.get();
    if (eh.isPresent()) {
      Optional<Fde> f = eh.get().findFde(pc);
      if (f.isPresent()) {
        return f;
      }
    }
    Optional<FrameTable> dbg = debugFrame.get();
    return dbg.isPresent() ? dbg.get().findFde(pc) : Optional.empty();
  }

  /**
   * Occurrences (at most {@value RodataSearch#MAX_MATCHES}) of {@code needle} in .rodata, or in
   * read-only non-executable PT_LOAD segments when there are no sections.
   */
  public List<RodataMatch> findInRodata(byte[] needle) throws ElfParseException {
    Objects.requireNonNull(needle, "needle");
    return RodataSearch.find(layout, needle.clone());
  }

  public Symbolizer symbolizer() throws ElfParseException {
    return symbolizer.get();
  }

  /** Shorthand for {@code symbolizer().lookup(address)}. */
  public Optional<SymbolMatch> symbolize(long address) throws ElfParseException {
    return symbolizer.get().lookup(address);
  }

  @Override
  public String toString() {
    return "ElfFile[" + source.description() + ", type=" + layout.header.type() + ", phnum="
        + layout.programHeaders.size() + ", shnum=" + layout.sections.size() + "]";
  }
}
