package dev.polystack.host.monitor;

import dev.polystack.host.elf.ElfFile;
import dev.polystack.host.elf.ElfParseException;
import dev.polystack.host.elf.ElfSymbol;
import dev.polystack.host.memory.ProcessMemory;
import dev.polystack.host.memory.RemoteReadException;
import dev.polystack.host.modules.ModuleOpenException;
import dev.polystack.host.modules.ModuleOpener;
import dev.polystack.host.proc.MappingKind;
import dev.polystack.host.proc.MemoryMapping;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
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

  /**
   * What can be refused before resolving: more sites than debug registers, and returns watched
   * where no function's bounds are known (an address) or from inside a function (+OFF: the stack
   * pointer there is not the entry's, which pairs a ret with its call).
   */
  static void check(List<SiteSpec> specs, boolean everyReturn) throws ProbeSites.SiteException {
    if (specs.size() > SLOTS) {
      throw new ProbeSites.SiteException(specs.size() + " sites with --hw: a thread has "
          + SLOTS + " debug registers, so at most " + SLOTS + " hardware-breakpoint sites per"
          + " run; probe the others in another run, or without --hw");
    }
    if (everyReturn) {
      for (SiteSpec s : specs) {
        if (s.runtime()) {
          throw new ProbeSites.SiteException(s + ": --monitor latency needs a function's"
              + " returns, and a Lua site watches only its first bytecode instruction; use"
              + " --monitor count");
        }
        if (s.isAddress() || s.offset() != 0) {
          throw new ProbeSites.SiteException(s + ": --monitor latency with --hw watches a"
              + " function's returns, and " + (s.isAddress() ? "a bare address names no"
              + " function" : "+OFF is not its entry") + "; give MODULE:SYMBOL, or use"
              + " --monitor count or args");
        }
      }
    }
  }

  /**
   * Every breakpoint of {@code sites} (entries and rets) within the debug registers, and at an
   * address of its own (the handler finds its site by the address).
   */
  static void checkBudget(List<ProbeSite> sites) throws ProbeSites.SiteException {
    int slots = 0;
    StringBuilder each = new StringBuilder();
    Map<Long, ProbeSite> at = new HashMap<>();
    for (ProbeSite s : sites) {
      List<Long> addresses = new ArrayList<>(s.returns());
      addresses.add(s.address());
      for (long a : addresses) {
        ProbeSite other = at.putIfAbsent(a, s);
        if (other != null && other != s) {
          throw new ProbeSites.SiteException("sites " + other.name() + " and " + s.name()
              + " need a breakpoint at the same instruction (0x" + Long.toHexString(a)
              + ") with --hw: give one of them");
        }
      }
      slots += 1 + s.returns().size();
      each.append(each.length() == 0 ? "" : ", ").append(s.name()).append(' ')
          .append(1 + s.returns().size());
    }
    if (slots > SLOTS) {
      throw new ProbeSites.SiteException("these --hw sites need " + slots + " breakpoints (" + each
          + "; a watched return takes one per ret instruction): a thread has " + SLOTS
          + " debug registers; probe fewer at once, or without --hw");
    }
  }

  /**
   * A function of the target's vDSO, by its name with or without {@code __vdso_}; with {@code
   * returns}, and its ret instructions.
   */
  static ProbeSite vdso(int pid, List<MemoryMapping> mappings, SiteSpec spec, boolean returns)
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
      ProbeSite site = new ProbeSite(spec, SiteSpec.VDSO, null, inImage, address);
      return returns ? site.withReturns(vdsoReturns(pid, vdso, spec, symbol,
          vdso.start() - elf.imageStartAddress())) : site;
    } finally {
      elf.close();
    }
  }

  /** The rets of a vDSO function: objdump reads the image, copied from memory to a file. */
  private static List<Long> vdsoReturns(int pid, MemoryMapping vdso, SiteSpec spec,
      ElfSymbol symbol, long bias) throws ProbeSites.SiteException {
    Path image = null;
    try {
      byte[] bytes = ProcessMemory.of(pid).readBytes(vdso.start(), (int) vdso.size());
      image = Files.createTempFile("polystack-vdso", ".so");
      Files.write(image, bytes);
      List<Long> rets = new ArrayList<>();
      for (long ret : ReturnInstructions.of(image, spec.toString(), symbol.value(),
          symbol.size())) {
        rets.add(ret + bias);
      }
      return rets;
    } catch (RemoteReadException | IOException e) {
      throw new ProbeSites.SiteException(spec + ": cannot copy the vDSO of process " + pid
          + " to find its returns (" + e.getMessage() + ")");
    } finally {
      if (image != null) {
        try {
          Files.deleteIfExists(image);
        } catch (IOException e) {
          // a temporary file left in the temporary directory
        }
      }
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
