package dev.polystack.host.elf;

import static dev.polystack.host.elf.DynamicSection.*;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;

/**
 * The dynamic symbol table with its hash tables and versions. The dynamic segment is preferred
 * because it is what the loader uses and it survives in images without section headers; sections
 * are the fallback for objects without PT_DYNAMIC.
 */
final class DynamicSymbols {
  final SymbolTable table;
  final SysvHashTable sysv;
  final GnuHashTable gnu;

  private DynamicSymbols(SymbolTable table, SysvHashTable sysv, GnuHashTable gnu) {
    this.table = table;
    this.sysv = sysv;
    this.gnu = gnu;
  }

  static DynamicSymbols read(ElfLayout layout, Optional<DynamicSection> dynamic) throws ElfParseException {
    if (dynamic.isPresent() && dynamic.get().value(DT_SYMTAB).isPresent()) {
      return fromDynamic(layout, dynamic.get());
    }
    return fromSections(layout);
  }

  private static long ptr(ElfLayout layout, DynamicSection d, long tag, String what) throws ElfParseException {
    OptionalLong v = d.value(tag);
    return v.isPresent() ? layout.dynamicPointerToOffset(v.getAsLong(), what) : -1;
  }

  private static DynamicSymbols fromDynamic(ElfLayout layout, DynamicSection d) throws ElfParseException {
    ByteView v = layout.view;
    long symOff = ptr(layout, d, DT_SYMTAB, "DT_SYMTAB");
    long strOff = ptr(layout, d, DT_STRTAB, "DT_STRTAB");
    if (strOff < 0) {
      throw v.error("dynamic segment has DT_SYMTAB but no DT_STRTAB");
    }
    long strSize = d.value(DT_STRSZ).orElse(v.size() - strOff);
    long entSize = d.value(DT_SYMENT).orElse(SymbolReader.SYM_SIZE);
    if (entSize != SymbolReader.SYM_SIZE) {
      throw v.error("DT_SYMENT " + entSize + " is not " + SymbolReader.SYM_SIZE);
    }
    v.check(strOff, strSize, "DT_STRTAB/DT_STRSZ");
    long hashOff = ptr(layout, d, DT_HASH, "DT_HASH");
    long gnuOff = ptr(layout, d, DT_GNU_HASH, "DT_GNU_HASH");
    SysvHashTable sysv = hashOff >= 0 ? SysvHashTable.read(v, hashOff) : null;
    GnuHashTable gnu = gnuOff >= 0 ? GnuHashTable.read(v, gnuOff, gnuHashSectionSize(layout, d)) : null;
    long count;
    if (sysv != null) {
      count = sysv.symbolCount();
    } else if (gnu != null) {
      count = gnu.symbolCount();
    } else {
      count = countWithoutHash(layout, symOff, strOff);
    }
    SymbolVersions versions = SymbolVersions.read(v, ptr(layout, d, DT_VERSYM, "DT_VERSYM"), count,
        ptr(layout, d, DT_VERDEF, "DT_VERDEF"), d.value(DT_VERDEFNUM).orElse(0),
        ptr(layout, d, DT_VERNEED, "DT_VERNEED"), d.value(DT_VERNEEDNUM).orElse(0), strOff, strSize);
    SymbolTable table = SymbolReader.read(v, symOff, count, entSize, strOff, strSize, versions, true);
    return new DynamicSymbols(table, sysv, gnu);
  }

  /** The GNU hash table has no length field; its section, if any, bounds chain walks. */
  private static long gnuHashSectionSize(ElfLayout layout, DynamicSection d) {
    long addr = d.value(DT_GNU_HASH).orElse(-1);
    for (SectionHeader sh : layout.sections) {
      if (sh.type() == SectionHeader.SHT_GNU_HASH && sh.addr() == addr) {
        return sh.size();
      }
    }
    return -1;
  }

  /** Without a hash table use the section size, else the common layout where dynstr follows dynsym. */
  private static long countWithoutHash(ElfLayout layout, long symOff, long strOff) throws ElfParseException {
    Optional<SectionHeader> sh = layout.sectionOfType(SectionHeader.SHT_DYNSYM);
    if (sh.isPresent()) {
      return sh.get().size() / SymbolReader.SYM_SIZE;
    }
    if (strOff > symOff) {
      return Math.min((strOff - symOff) / SymbolReader.SYM_SIZE, SymbolReader.MAX_SYMBOLS);
    }
    throw layout.view.error("cannot determine dynamic symbol count: no DT_HASH, DT_GNU_HASH or .dynsym");
  }

  private static DynamicSymbols fromSections(ElfLayout layout) throws ElfParseException {
    Optional<SectionHeader> dynsym = layout.sectionOfType(SectionHeader.SHT_DYNSYM);
    if (dynsym.isEmpty()) {
      return new DynamicSymbols(SymbolTable.empty(), null, null);
    }
    ByteView v = layout.view;
    SectionHeader sym = dynsym.get();
    SectionHeader str = linked(layout, sym, "dynsym");
    long[] strRange = layout.sectionRange(str);
    long[] symRange = layout.sectionRange(sym);
    long count = symRange[1] / SymbolReader.SYM_SIZE;
    long versymOff = -1;
    long verdefOff = -1;
    long verdefNum = 0;
    long verneedOff = -1;
    long verneedNum = 0;
    for (SectionHeader sh : layout.sections) {
      if (sh.type() == SectionHeader.SHT_GNU_VERSYM) {
        versymOff = layout.sectionRange(sh)[0];
      } else if (sh.type() == SectionHeader.SHT_GNU_VERDEF) {
        verdefOff = layout.sectionRange(sh)[0];
        verdefNum = sh.info() & 0xffffffffL;
      } else if (sh.type() == SectionHeader.SHT_GNU_VERNEED) {
        verneedOff = layout.sectionRange(sh)[0];
        verneedNum = sh.info() & 0xffffffffL;
      }
    }
    SymbolVersions versions = SymbolVersions.read(v, versymOff, count, verdefOff, verdefNum, verneedOff,
        verneedNum, strRange[0], strRange[1]);
    SymbolTable table = SymbolReader.read(v, symRange[0], count, SymbolReader.SYM_SIZE, strRange[0], strRange[1],
        versions, true);
    SysvHashTable sysv = null;
    GnuHashTable gnu = null;
    for (SectionHeader sh : layout.sections) {
      if (sh.type() == SectionHeader.SHT_HASH) {
        sysv = SysvHashTable.read(v, layout.sectionRange(sh)[0]);
      } else if (sh.type() == SectionHeader.SHT_GNU_HASH) {
        gnu = GnuHashTable.read(v, layout.sectionRange(sh)[0], sh.size());
      }
    }
    return new DynamicSymbols(table, sysv, gnu);
  }

  static SectionHeader linked(ElfLayout layout, SectionHeader sh, String what) throws ElfParseException {
    int link = sh.link();
    if (link <= 0 || link >= layout.sections.size()) {
      throw layout.view.error(what + " section " + sh.index() + ": sh_link " + link + " is not a valid section");
    }
    SectionHeader str = layout.sections.get(link);
    if (str.type() != SectionHeader.SHT_STRTAB) {
      throw layout.view.error(what + " section " + sh.index() + ": linked section " + link + " is not SHT_STRTAB");
    }
    return str;
  }

  /** The .symtab (static) table, or an empty table for stripped objects. */
  static SymbolTable readStatic(ElfLayout layout) throws ElfParseException {
    Optional<SectionHeader> symtab = layout.sectionOfType(SectionHeader.SHT_SYMTAB);
    if (symtab.isEmpty()) {
      return SymbolTable.empty();
    }
    SectionHeader sym = symtab.get();
    SectionHeader str = linked(layout, sym, "symtab");
    long[] symRange = layout.sectionRange(sym);
    long[] strRange = layout.sectionRange(str);
    return SymbolReader.read(layout.view, symRange[0], symRange[1] / SymbolReader.SYM_SIZE, SymbolReader.SYM_SIZE,
        strRange[0], strRange[1], SymbolVersions.none(layout.view), false);
  }

  OptionalLong count(HashKind kind) throws ElfParseException {
    if (kind == HashKind.SYSV) {
      return sysv == null ? OptionalLong.empty() : OptionalLong.of(sysv.symbolCount());
    }
    return gnu == null ? OptionalLong.empty() : OptionalLong.of(gnu.symbolCount());
  }

  /** Hash lookup honouring version specs; empty when that kind of table is absent. */
  Optional<ElfSymbol> lookup(String spec, HashKind kind) throws ElfParseException {
    SymbolSpec s = SymbolSpec.parse(spec);
    List<Integer> idx;
    if (kind == HashKind.SYSV) {
      if (sysv == null) {
        return Optional.empty();
      }
      idx = sysv.find(s.name(), table);
    } else {
      if (gnu == null) {
        return Optional.empty();
      }
      idx = gnu.find(s.name(), table);
    }
    List<ElfSymbol> candidates = new ArrayList<>(idx.size());
    for (int i : idx) {
      candidates.add(table.symbols().get(i));
    }
    return SymbolTable.best(s, candidates);
  }

  /** GNU hash if present, else SysV, else a linear scan (undefined symbols are never hashed by GNU). */
  Optional<ElfSymbol> lookup(String spec) throws ElfParseException {
    if (gnu != null) {
      return lookup(spec, HashKind.GNU);
    }
    if (sysv != null) {
      return lookup(spec, HashKind.SYSV);
    }
    return table.find(spec);
  }
}
