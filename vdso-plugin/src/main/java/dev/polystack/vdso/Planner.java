package dev.polystack.vdso;

import dev.polystack.plugin.api.ProbePlan;
import dev.polystack.plugin.api.ProbePlanException;
import dev.polystack.plugin.api.ProbeRequest;
import dev.polystack.plugin.api.ProbeSite;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * Fits the requested functions into the per-thread breakpoint budget. Each function needs an
 * entry slot and one slot for its return site (the return address is learned at entry), so a
 * budget of 4 traces two functions; the rest is reported as omitted, never silently dropped.
 */
final class Planner {
  static final int SLOTS_PER_FUNCTION = 2;

  /** Default order when the user names no functions: by how often programs call them. */
  static final List<String> DEFAULT_ORDER = Decoders.DECODED;

  private Planner() {}

  private static int priority(String name) {
    int i = DEFAULT_ORDER.indexOf(name);
    return i < 0 ? DEFAULT_ORDER.size() : i;
  }

  static ProbePlan plan(Inventory inventory, ProbeRequest request) throws ProbePlanException {
    if (inventory.exports().isEmpty()) {
      throw new ProbePlanException("the image exports no __vdso_* functions");
    }
    Set<Inventory.Export> wanted = new LinkedHashSet<>();
    if (request.functions().isEmpty()) {
      // Every export with a decoder; the budget fits few: the ones programs call most go first.
      inventory.exports().stream()
          .filter(e -> Decoders.hasDecoder(e.name()))
          .sorted(java.util.Comparator.comparingInt(e -> priority(e.name())))
          .forEach(wanted::add);
    } else {
      for (String name : request.functions()) {
        Inventory.Export e = inventory.find(name);
        if (e == null) {
          throw new ProbePlanException("unknown vDSO function '" + name + "'; the vDSO exports: "
              + inventory.names());
        }
        wanted.add(e);
      }
    }
    List<ProbeSite> sites = new ArrayList<>();
    List<String> omitted = new ArrayList<>();
    int slotsLeft = request.slotsPerThread();
    for (Inventory.Export e : wanted) {
      if (slotsLeft < SLOTS_PER_FUNCTION) {
        omitted.add(e.name() + ": no hardware breakpoint slot left (" + request.slotsPerThread()
            + " per thread, " + SLOTS_PER_FUNCTION + " per function); trace it in another session"
            + " or name fewer functions with --functions");
        continue;
      }
      sites.add(new ProbeSite(e.name(), e.version(), e.address(), ProbeSite.Kind.ENTRY));
      slotsLeft -= SLOTS_PER_FUNCTION;
    }
    return new ProbePlan(sites, omitted);
  }
}
