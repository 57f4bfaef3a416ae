package dev.polystack.host.probes;

import dev.polystack.host.memory.ProcessMemory;
import dev.polystack.host.modules.ElfModuleImage;
import dev.polystack.host.modules.ModuleOpenException;
import dev.polystack.host.modules.ModuleOpener;
import dev.polystack.host.proc.MappingKind;
import dev.polystack.host.proc.MemoryMapping;
import dev.polystack.host.proc.ProcFs;
import dev.polystack.host.proc.ProcReadException;
import dev.polystack.host.proc.ProcessView;
import dev.polystack.plugin.api.ProbePlan;
import dev.polystack.plugin.api.ProbePlanException;
import dev.polystack.plugin.api.ProbePlugin;
import dev.polystack.plugin.api.ProbeRequest;
import dev.polystack.plugin.api.ProbeSite;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.OptionalLong;

/**
 * Finds a process's vDSO (AT_SYSINFO_EHDR, checked against the {@code [vdso]} mapping), reads the
 * image from memory and has the probe plug-in plan on it.
 */
public final class VdsoResolver {
  private final ProcFs proc;
  private final ProbePlugin plugin;
  private final ProbeRequest request;
  private final ModuleOpener opener = new ModuleOpener();

  public VdsoResolver(ProcFs proc, ProbePlugin plugin, ProbeRequest request) {
    this.proc = proc;
    this.plugin = plugin;
    this.request = request;
  }

  /** The vDSO base from the auxiliary vector, or empty if the process has none or is gone. */
  public OptionalLong base(int pid) {
    try {
      return proc.forPid(pid).auxv().vdsoBase();
    } catch (ProcReadException e) {
      return OptionalLong.empty();
    }
  }

  public ResolvedPlan resolve(int pid) throws ProbeException {
    ProcessView view = proc.forPid(pid);
    MemoryMapping vdso;
    OptionalLong base;
    try {
      base = view.auxv().vdsoBase();
      vdso = view.maps().first(MappingKind.VDSO).orElse(null);
    } catch (ProcReadException e) {
      throw new ProbeException("cannot find the vDSO of process " + pid + ": " + e.getMessage());
    }
    if (vdso == null || base.isEmpty()) {
      throw new ProbeException("process " + pid + " has no vDSO (no AT_SYSINFO_EHDR or no [vdso]"
          + " mapping): nothing to trace");
    }
    if (base.getAsLong() != vdso.start()) {
      throw new ProbeException("process " + pid + ": AT_SYSINFO_EHDR 0x"
          + Long.toHexString(base.getAsLong()) + " is not the [vdso] mapping at 0x"
          + Long.toHexString(vdso.start()) + "; it may be exec'ing, try again");
    }
    ElfModuleImage image;
    long imageStart;
    try {
      var elf = opener.openVdso(vdso, ProcessMemory.of(pid));
      image = new ElfModuleImage(elf, "[vdso]");
      imageStart = elf.imageStartAddress();
    } catch (ModuleOpenException e) {
      throw new ProbeException("cannot read the vDSO of process " + pid + ": " + e.getMessage());
    }
    ProbePlan plan;
    try {
      plan = plugin.plan(image, request);
    } catch (ProbePlanException e) {
      throw new ProbeException(e.getMessage(), e.badRequest());
    }
    long bias = vdso.start() - imageStart;
    Map<Long, ProbeSite> entries = new LinkedHashMap<>();
    for (ProbeSite s : plan.sites()) {
      if (s.kind() == ProbeSite.Kind.ENTRY) {
        entries.put(s.address() + bias, s);
      }
    }
    if (entries.isEmpty()) {
      throw new ProbeException("nothing to trace in the vDSO of process " + pid + ": "
          + String.join("; ", plan.omitted()));
    }
    return new ResolvedPlan(pid, vdso.start(), bias, plan, entries);
  }
}
