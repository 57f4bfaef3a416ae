package dev.polystack.host.monitor;

import dev.polystack.host.elf.ElfFile;
import dev.polystack.host.elf.ElfParseException;
import dev.polystack.host.elf.ElfSymbol;
import dev.polystack.host.memory.ProcessMemory;
import dev.polystack.host.modules.ModuleOpenException;
import dev.polystack.host.modules.ModuleOpener;
import dev.polystack.host.proc.MappingKind;
import dev.polystack.host.proc.MemoryMapping;
import java.util.List;
import java.util.Optional;
import java.util.TreeSet;

/**
 * Sites for hardware breakpoints ({@code probe --hw}): the budget of a thread's debug registers,
 * and the two kinds of code only a breakpoint can probe, which no file holds: the vDSO (its
 * symbols read from the image in the target's memory, as {@code polystack vdso} does) and a
 * bare address in an executable mapping (JIT code). docs/probes.md, "Hardware-breakpoint
 * sites".
 */
final class HardwareSites {
  /** x86-64 has four debug registers per thread; each site takes one in every thread. */
  static final int SLOTS = 4;
  private static final String VDSO_PREFIX = "__vdso_";

  private HardwareSites() {}

  /** The budget and what a breakpoint at an entry can do: no more than 4, no %return. */
  static void check(List<SiteSpec> specs) throws ProbeSites.SiteException {
    if (specs.size() > SLOTS) {
      throw new ProbeSites.SiteException(specs.size() + " sites with --hw: a thread has "
          + SLOTS + " debug registers, so at most " + SLOTS + " hardware-breakpoint sites per"
          + " run; probe the others in another run, or without --hw");
    }
    for (SiteSpec s : specs) {
      if (s.atReturn()) {
        throw new ProbeSites.SiteException(s + ": --hw places breakpoints at entries only (a"
            + " return would take a debug register per ret instruction); probe the return"
            + " without --hw");
      }
    }
  }

  /** A function of the target's vDSO, by its name with or without {@code __vdso_}. */
  static ProbeSite vdso(int pid, List<MemoryMapping> mappings, SiteSpec spec)
      throws ProbeSites.SiteException {
    MemoryMapping vdso = mappings.stream().filter(m -> m.kind() == MappingKind.VDSO)
        .findFirst().orElseThrow(() -> new ProbeSites.SiteException(spec + ": process " + pid
            + " has no [vdso] mapping; probe a module it maps"));
    ElfFile elf;
    try {
      elf = ModuleOpener.vdso(vdso, ProcessMemory.of(pid));
    } catch (ModuleOpenException e) {
      throw new ProbeSites.SiteException(spec + ": cannot read the vDSO of process " + pid + " ("
          + e.getMessage() + ")");
    }
    try {
      ElfSymbol symbol = function(elf, spec.symbol())
          .or(() -> spec.symbol().startsWith(VDSO_PREFIX) ? Optional.empty()
              : function(elf, VDSO_PREFIX + spec.symbol()))
          .orElse(null);
      if (symbol == null) {
        throw new ProbeSites.SiteException("no function " + spec.symbol() + " in the vDSO of"
            + " process " + pid + " (it exports " + String.join(", ", exports(elf)) + ")");
      }
      if (spec.offset() > 0 && symbol.size() > 0 && spec.offset() >= symbol.size()) {
        throw new ProbeSites.SiteException(spec + ": +0x" + Long.toHexString(spec.offset())
            + " is past the end of " + symbol.name() + " (" + symbol.size() + " bytes)");
      }
      long inImage = symbol.value() + spec.offset() - elf.imageStartAddress();
      long address = vdso.start() + inImage;
      if (!vdso.isExecutable() || !vdso.contains(address)) {
        throw new ProbeSites.SiteException(spec + ": " + symbol.name() + " lies outside the"
            + " executable [vdso] mapping of process " + pid);
      }
      return new ProbeSite(spec, SiteSpec.VDSO, null, inImage, address);
    } finally {
      elf.close();
    }
  }

  private static Optional<ElfSymbol> function(ElfFile elf, String name) {
    try {
      return elf.findDynamicSymbol(name).filter(s -> s.isDefined() && s.value() != 0
          && (s.isFunction() || s.type() == ElfSymbol.STT_NOTYPE));
    } catch (ElfParseException e) {
      return Optional.empty();
    }
  }

  private static List<String> exports(ElfFile elf) {
    TreeSet<String> names = new TreeSet<>();
    try {
      for (ElfSymbol s : elf.dynamicSymbols().symbols()) {
        if (s.isDefined() && s.isFunction() && s.name().startsWith(VDSO_PREFIX)) {
          names.add(s.name().substring(VDSO_PREFIX.length()));
        }
      }
    } catch (ElfParseException e) {
      return List.of("(its symbols are unreadable)");
    }
    return List.copyOf(names);
  }

  /**
   * An instruction address in an executable mapping of the target: code a breakpoint can watch
   * whatever holds it (JIT code, an anonymous mapping). Whether it starts an instruction cannot
   * be checked; a breakpoint elsewhere never fires and changes nothing.
   */
  static ProbeSite address(int pid, List<MemoryMapping> mappings, SiteSpec spec)
      throws ProbeSites.SiteException {
    long at = spec.address();
    for (MemoryMapping m : mappings) {
      if (!m.contains(at)) {
        continue;
      }
      String name = m.path().isEmpty() ? "[anonymous]" : m.path();
      if (!m.isExecutable()) {
        throw new ProbeSites.SiteException(spec + " is not in an executable mapping of process "
            + pid + " (it lies in " + name + ", " + m.permissions() + "): give the address of"
            + " an instruction");
      }
      return new ProbeSite(spec, name, null, m.offset() + (at - m.start()), at);
    }
    throw new ProbeSites.SiteException(spec + " is not in an executable mapping of process "
        + pid + " (nothing is mapped there): give the address of an instruction");
  }
}
