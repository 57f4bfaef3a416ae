package dev.polystack.host.modules;

import dev.polystack.host.elf.AddressRange;
import dev.polystack.host.elf.ElfFile;
import dev.polystack.host.elf.ElfParseException;
import dev.polystack.host.elf.ElfSymbol;
import dev.polystack.host.elf.Fde;
import dev.polystack.host.elf.FrameTable;
import dev.polystack.host.elf.ProgramHeader;
import dev.polystack.host.elf.RodataMatch;
import dev.polystack.host.elf.SectionHeader;
import dev.polystack.host.elf.SymbolTable;
import dev.polystack.plugin.api.CodeRange;
import dev.polystack.plugin.api.ImageReadException;
import dev.polystack.plugin.api.ModuleImage;
import dev.polystack.plugin.api.ModuleSection;
import dev.polystack.plugin.api.ModuleSegment;
import dev.polystack.plugin.api.ModuleSymbol;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;

/**
 * A plug-in's view of an ELF module: the host's ELF reader behind the plugin-api interface, so
 * plug-ins inspect binaries without a dependency on host code.
 */
public final class ElfModuleImage implements ModuleImage {
  private static final int STV_HIDDEN = 2;
  private static final int STV_INTERNAL = 1;

  private final ElfFile elf;
  private final String name;
  private final Optional<String> buildId;
  private volatile List<CodeRange> unwindRanges;

  /** Where a stripped image's full symbol table comes from: itself, or its debug file. */
  @FunctionalInterface
  public interface StaticSymbols {
    ElfFile source() throws ElfParseException;
  }

  private final StaticSymbols staticSymbols;

  public ElfModuleImage(ElfFile elf, String name) {
    this(elf, name, () -> elf);
  }

  /** @param staticSymbols the full symbol table's file, e.g. a verified separate debug file */
  public ElfModuleImage(ElfFile elf, String name, StaticSymbols staticSymbols) {
    this.elf = Objects.requireNonNull(elf, "elf");
    this.name = Objects.requireNonNull(name, "name");
    this.staticSymbols = Objects.requireNonNull(staticSymbols, "staticSymbols");
    Optional<String> id;
    try {
      id = elf.buildId().map(b -> b.hex());
    } catch (ElfParseException e) {
      id = Optional.empty(); // a broken note must not hide the rest of the module
    }
    this.buildId = id;
  }

  public ElfFile elf() {
    return elf;
  }

  @Override
  public String name() {
    return name;
  }

  @Override
  public Optional<String> buildId() {
    return buildId;
  }

  @Override
  public Optional<ModuleSymbol> symbol(String spec) throws ImageReadException {
    try {
      Optional<ElfSymbol> s = elf.findDynamicSymbol(spec);
      if (s.isEmpty()) {
        s = elf.findSymbol(spec);
      }
      return s.map(ElfModuleImage::toModuleSymbol);
    } catch (ElfParseException e) {
      throw wrap(e);
    }
  }

  @Override
  public List<ModuleSymbol> dynamicSymbols() throws ImageReadException {
    // Made at each call, not kept: a plug-in reads the list once per file (its inspection is
    // cached), while every described process keeps an image per module.
    try {
      return elf.dynamicSymbols().namedSymbols().stream()
          .map(ElfModuleImage::toModuleSymbol)
          .toList();
    } catch (ElfParseException e) {
      throw wrap(e);
    }
  }

  @Override
  public boolean hasStaticSymbols() throws ImageReadException {
    try {
      return !elf.staticSymbols().isEmpty();
    } catch (ElfParseException e) {
      throw wrap(e);
    }
  }

  @Override
  public List<CodeRange> unwindRanges() throws ImageReadException {
    List<CodeRange> out = unwindRanges;
    if (out == null) {
      try {
        Optional<FrameTable> eh = elf.ehFrame();
        List<CodeRange> ranges = new ArrayList<>();
        if (eh.isPresent()) {
          for (Fde fde : eh.get().fdes()) {
            if (fde.pcRange() > 0 && fde.pcBegin() + fde.pcRange() > fde.pcBegin()) {
              ranges.add(new CodeRange(fde.pcBegin(), fde.pcBegin() + fde.pcRange(), "fde"));
            }
          }
        }
        out = List.copyOf(ranges);
      } catch (ElfParseException e) {
        throw wrap(e);
      }
      unwindRanges = out;
    }
    return out;
  }

  @Override
  public List<CodeRange> executableRanges() {
    List<CodeRange> out = new ArrayList<>();
    for (AddressRange r : elf.executableRanges()) {
      if (Long.compareUnsigned(r.start(), r.end()) < 0) {
        out.add(new CodeRange(r.start(), r.end(), "PT_LOAD r-x"));
      }
    }
    return out;
  }

  @Override
  public List<Long> findInReadOnlyData(byte[] needle, int limit) throws ImageReadException {
    try {
      List<Long> out = new ArrayList<>();
      for (RodataMatch m : elf.findInRodata(needle)) {
        if (out.size() >= limit) {
          break;
        }
        out.add(m.address());
      }
      return out;
    } catch (ElfParseException e) {
      throw wrap(e);
    }
  }

  @Override
  public int read(long address, byte[] dst, int offset, int length)
      throws ImageReadException {
    Objects.checkFromIndexSize(offset, length, dst.length);
    OptionalLong fileOffset = elf.virtualAddressToOffset(address);
    if (fileOffset.isEmpty()) {
      return 0;
    }
    try {
      return elf.source().read(fileOffset.getAsLong(), dst, offset, length);
    } catch (IOException e) {
      throw new ImageReadException(name + ": cannot read: " + e.getMessage(), e);
    }
  }

  @Override
  public List<ModuleSegment> segments() {
    List<ModuleSegment> out = new ArrayList<>();
    for (ProgramHeader p : elf.programHeaders()) {
      out.add(new ModuleSegment(p.type(), p.flags(), p.vaddr(), p.fileSize(), p.memSize(),
          p.align()));
    }
    return out;
  }

  @Override
  public Optional<ModuleSection> section(String sectionName) {
    return elf.section(sectionName)
        .map(h -> new ModuleSection(h.name(), h.type(), h.flags(), h.addr(), h.size()));
  }

  @Override
  public int readSection(ModuleSection section, long offset, byte[] dst, int dstOffset,
      int length) throws ImageReadException {
    Objects.checkFromIndexSize(dstOffset, length, dst.length);
    Optional<SectionHeader> header = elf.section(section.name());
    if (header.isEmpty() || header.get().type() == SectionHeader.SHT_NOBITS || offset < 0
        || offset >= header.get().size() || header.get().size() != section.size()) {
      return 0;
    }
    int n = (int) Math.min(length, header.get().size() - offset);
    try {
      return elf.source().read(header.get().offset() + offset, dst, dstOffset, n);
    } catch (IOException e) {
      throw new ImageReadException(name + ": cannot read " + section.name() + ": "
          + e.getMessage(), e);
    }
  }

  @Override
  public Optional<ModuleImage> debugImage() throws ImageReadException {
    ElfFile debug;
    try {
      debug = staticSymbols.source();
    } catch (ElfParseException e) {
      throw wrap(e);
    }
    return debug == elf ? Optional.empty()
        : Optional.of(new ElfModuleImage(debug, name + " (debug file)"));
  }

  @Override
  public Optional<ModuleSymbol> threadLocalSymbol(String symbolName) throws ImageReadException {
    try {
      Optional<ModuleSymbol> full = threadLocal(staticSymbols.source().staticSymbols(), symbolName);
      return full.isPresent() ? full : threadLocal(elf.dynamicSymbols(), symbolName);
    } catch (ElfParseException e) {
      throw wrap(e);
    }
  }

  private static Optional<ModuleSymbol> threadLocal(SymbolTable table, String symbolName) {
    for (ElfSymbol s : table.named(symbolName)) {
      if (s.type() == ElfSymbol.STT_TLS && s.isDefined()) {
        return Optional.of(toModuleSymbol(s));
      }
    }
    return Optional.empty();
  }

  static ModuleSymbol toModuleSymbol(ElfSymbol s) {
    boolean visible = s.visibility() != STV_HIDDEN && s.visibility() != STV_INTERNAL;
    boolean global = s.binding() == ElfSymbol.STB_GLOBAL || s.binding() == ElfSymbol.STB_WEAK;
    String version = s.version() == null ? "" : s.version();
    return new ModuleSymbol(s.name(), version, s.isDefaultVersion(), s.value(), s.size(),
        s.isFunction(), s.dynamic() && s.isDefined() && global && visible);
  }

  private ImageReadException wrap(ElfParseException e) {
    return new ImageReadException(name + ": " + e.getMessage(), e);
  }
}
