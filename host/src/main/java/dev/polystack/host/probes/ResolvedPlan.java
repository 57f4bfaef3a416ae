package dev.polystack.host.probes;

import dev.polystack.plugin.api.ProbePlan;
import dev.polystack.plugin.api.ProbeSite;
import java.util.Map;

/**
 * A plan placed in one process image: the vDSO's load bias and each entry site by its absolute
 * address. Re-made after every exec, which maps a new vDSO at a new address.
 *
 * @param pid the process
 * @param vdsoBase where the vDSO is mapped (AT_SYSINFO_EHDR)
 * @param bias runtime address minus module virtual address
 * @param plan what the plug-in planned (sites as module virtual addresses)
 * @param entries absolute address to entry site
 */
public record ResolvedPlan(int pid, long vdsoBase, long bias, ProbePlan plan, Map<Long, ProbeSite> entries) {
  public ResolvedPlan {
    entries = Map.copyOf(entries);
  }
}
