package dev.polystack.host.monitor;

import dev.polystack.host.bpf.ProbeMonitor;
import dev.polystack.host.elf.ElfFile;
import dev.polystack.host.elf.ElfParseException;
import dev.polystack.host.elf.ElfSymbol;
import dev.polystack.host.proc.MemoryMapping;
import dev.polystack.plugin.api.WatchPoint;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;

/**
 * Resolves {@link SiteSpec}s against a process's mapped modules: the module by path or name
 * among its executable file mappings, the symbol in its .dynsym then .symtab, the file offset
 * through the PT_LOAD that holds it (uprobes take file offsets), the address through the
 * mapping of that offset.
 */
public final class ProbeSites {
  private ProbeSites() {}

  /** A site that cannot be probed: the message is the user's one line (exit 2). */
  public static final class SiteException extends Exception {
    private static final long serialVersionUID = 1L;

    public SiteException(String message) {
      super(message);
    }
  }

  /**
   * The sites of {@code specs} in process {@code pid}, which maps {@code mappings}; {@code
   * root} is /proc (modules are opened through /proc/PID/root, as the process sees them).
   */
  public static List<ProbeSite> resolve(Path root, int pid, List<MemoryMapping> mappings,
      List<SiteSpec> specs) throws SiteException {
    return resolve(root, pid, mappings, specs, false, false);
  }

  /**
   * As {@link #resolve(Path, int, List, List)}; with {@code hardware} the sites are for
   * hardware breakpoints: the vDSO and bare addresses are allowed, and a site whose return is
   * watched ({@code %return}, or every site with {@code everyReturn}, as the latency monitor)
   * gets its ret instructions; all within {@value HardwareSites#SLOTS} debug registers.
   */
  public static List<ProbeSite> resolve(Path root, int pid, List<MemoryMapping> mappings,
      List<SiteSpec> specs, boolean hardware, boolean everyReturn) throws SiteException {
    return resolve(root, pid, mappings, specs, hardware, everyReturn, RuntimeSites.NONE);
  }

  /**
   * As {@link #resolve(Path, int, List, List, boolean, boolean)}, with runtime-level sites
   * ({@code lua:CHUNK:LINE}) resolved by {@code runtimeSites} to memory watched with a hardware
   * read/write breakpoint.
   */
  public static List<ProbeSite> resolve(Path root, int pid, List<MemoryMapping> mappings,
      List<SiteSpec> specs, boolean hardware, boolean everyReturn, RuntimeSites runtimeSites)
      throws SiteException {
    if (specs.isEmpty()) {
      throw new SiteException("no probe site given: name at least one, e.g. libc.so.6:write");
    }
    if (specs.size() > ProbeMonitor.MAX_SITES) {
      throw new SiteException(specs.size() + " sites given: at most " + ProbeMonitor.MAX_SITES
          + " per run");
    }
    if (hardware) {
      HardwareSites.check(specs, everyReturn);
    }
    List<ProbeSite> out = new ArrayList<>();
    Map<String, ElfFile> opened = new LinkedHashMap<>();
    try {
      for (SiteSpec spec : specs) {
        if (spec.runtime()) {
          if (!hardware) {
            throw new SiteException(spec + ": a runtime site is watched with a hardware"
                + " breakpoint: add --hw");
          }
          WatchPoint w = runtimeSites.resolve(pid, spec);
          ProbeSite site = new ProbeSite(spec, w.description(), null, 0, w.address(), List.of(),
              w.length());
          unique(out, site, hardware);
          out.add(site);
          continue;
        }
        if (spec.isAddress() || spec.isVdso()) {
          if (!hardware) {
            throw new SiteException(spec + ": " + (spec.isVdso() ? "vDSO code" : "code at a bare"
                + " address") + " can only be probed with hardware breakpoints: add --hw");
          }
          ProbeSite site = spec.isVdso()
              ? HardwareSites.vdso(pid, mappings, spec, spec.atReturn() || everyReturn)
              : HardwareSites.address(pid, mappings, spec);
          unique(out, site, hardware);
          out.add(site);
          continue;
        }
        String module = module(pid, mappings, spec);
        Path file = root.resolve(Integer.toString(pid)).resolve("root" + module);
        ElfFile elf = opened.get(module);
        if (elf == null) {
          try {
            elf = ElfFile.open(file);
          } catch (ElfParseException e) {
            throw new SiteException("cannot read " + module + " of process " + pid + " ("
                + e.getMessage() + "): probe a module polystack can read");
          }
          opened.put(module, elf);
        }
        ProbeSite site = site(pid, mappings, spec, module, file, elf,
            hardware && (spec.atReturn() || everyReturn));
        unique(out, site, hardware);
        out.add(site);
      }
    } finally {
      opened.values().forEach(ElfFile::close);
    }
    if (hardware) {
      HardwareSites.checkBudget(out);
    }
    return List.copyOf(out);
  }

  /**
   * Refuses {@code site} when an earlier one is the same place (with {@code hardware}, a
   * function's entry and its %return too: they would share the entry's breakpoint).
   */
  private static void unique(List<ProbeSite> earlier, ProbeSite site, boolean hardware)
      throws SiteException {
    for (ProbeSite e : earlier) {
      boolean samePlace = e.file() != null && site.file() != null
          ? e.file().equals(site.file()) && e.fileOffset() == site.fileOffset()
          : e.address() == site.address();
      if (samePlace && hardware && e.spec().atReturn() != site.spec().atReturn()) {
        throw new SiteException("sites " + e.name() + " and " + site.name() + " share the"
            + " entry's breakpoint with --hw: give one of them (an args record at %return"
            + " carries the entry's registers too)");
      }
      if (samePlace && e.spec().atReturn() == site.spec().atReturn()) {
        throw new SiteException("sites " + e.name() + " and " + site.name() + " are one"
            + " place in " + site.module() + ": give it once");
      }
    }
  }

  /** The one mapped executable file {@code spec} names. */
  private static String module(int pid, List<MemoryMapping> mappings, SiteSpec spec)
      throws SiteException {
    Set<String> modules = new LinkedHashSet<>();
    for (MemoryMapping m : mappings) {
      if (m.isExecutable() && m.isFileBacked() && m.path().startsWith("/") && !m.deleted()) {
        modules.add(m.path());
      }
    }
    String want = spec.module();
    List<String> exact = modules.stream().filter(p -> p.equals(want)
        || p.substring(p.lastIndexOf('/') + 1).equals(want)).toList();
    List<String> found = !exact.isEmpty() ? exact : modules.stream()
        .filter(p -> p.substring(p.lastIndexOf('/') + 1).startsWith(want + ".")).toList();
    if (found.size() == 1) {
      return found.get(0);
    }
    if (found.isEmpty()) {
      List<String> names = modules.stream().map(p -> p.substring(p.lastIndexOf('/') + 1))
          .limit(12).toList();
      throw new SiteException("module " + want + " is not mapped in process " + pid
          + " (it maps " + String.join(", ", names) + (modules.size() > 12 ? ", ..." : "")
          + "): name one of its modules, or wait until it loads the library");
    }
    throw new SiteException("module " + want + " is ambiguous in process " + pid + ": "
        + String.join(", ", found) + "; give the module's path");
  }

  private static ProbeSite site(int pid, List<MemoryMapping> mappings, SiteSpec spec,
      String module, Path file, ElfFile elf, boolean returns) throws SiteException {
    ElfSymbol symbol;
    try {
      symbol = defined(elf.findDynamicSymbol(spec.symbol()))
          .or(() -> {
            try {
              return defined(elf.staticSymbols().find(spec.symbol()));
            } catch (ElfParseException e) {
              return Optional.empty();
            }
          }).orElse(null);
    } catch (ElfParseException e) {
      throw new SiteException("cannot read the symbols of " + module + " (" + e.getMessage()
          + ")");
    }
    if (symbol == null) {
      throw new SiteException("no symbol " + spec.symbol() + " in " + module + " (process "
          + pid + "): check the name with nm -D " + module + " (or nm for a .symtab)");
    }
    if (symbol.type() == ElfSymbol.STT_GNU_IFUNC) {
      throw new SiteException(spec.symbol() + " in " + module + " is an indirect function"
          + " (IFUNC): its symbol is the resolver, called once; probe the implementation the"
          + " resolver picks (e.g. __memcpy_avx_unaligned_erms)");
    }
    if (!symbol.isFunction() && symbol.type() != ElfSymbol.STT_NOTYPE) {
      throw new SiteException(spec.symbol() + " in " + module + " is not a function: probe"
          + " code, not data");
    }
    if (spec.offset() > 0 && symbol.size() > 0 && spec.offset() >= symbol.size()) {
      throw new SiteException(spec + ": +0x" + Long.toHexString(spec.offset()) + " is past the"
          + " end of " + spec.symbol() + " (" + symbol.size() + " bytes)");
    }
    if (spec.offset() > 0) {
      InstructionStarts.check(file, spec.toString(), symbol.value(), symbol.size(),
          spec.offset());
    }
    OptionalLong offset = elf.virtualAddressToOffset(symbol.value() + spec.offset());
    if (offset.isEmpty()) {
      throw new SiteException(spec + ": the address of " + spec.symbol() + " lies in no"
          + " loadable segment of " + module);
    }
    long at = offset.getAsLong();
    for (MemoryMapping m : mappings) {
      if (m.isExecutable() && m.path().equals(module) && !m.deleted()
          && Long.compareUnsigned(at, m.offset()) >= 0
          && Long.compareUnsigned(at - m.offset(), m.size()) < 0) {
        ProbeSite site = new ProbeSite(spec, module, file, at, m.start() + (at - m.offset()));
        if (!returns) {
          return site;
        }
        List<Long> rets = new ArrayList<>();
        for (long ret : ReturnInstructions.of(file, spec.toString(), symbol.value(),
            symbol.size())) {
          rets.add(site.address() + (ret - symbol.value()));
        }
        return site.withReturns(rets);
      }
    }
    throw new SiteException(spec + ": " + spec.symbol() + "'s code is not mapped executable in"
        + " process " + pid);
  }

  private static Optional<ElfSymbol> defined(Optional<ElfSymbol> s) {
    return s.filter(x -> x.isDefined() && x.value() != 0);
  }
}
