package dev.polystack.vdso;

import dev.polystack.plugin.api.ImageReadException;
import dev.polystack.plugin.api.ModuleImage;
import dev.polystack.plugin.api.ProbeExit;
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
 * budget of 4 traces two functions; a backend that shares and lends return slots (ptrace: the
 * thread is stopped at every hit) needs only the entry slot, so 4 fit. The rest is reported as
 * omitted, never silently dropped.
 * For a backend that breaks on the function's own return instructions (the BPF backend), a
 * function needs its entry and every {@code ret} it has, found by decoding it (see
 * {@link ReturnInstructions}); functions are taken in order while they fit, and any that does
 * not fit or cannot be decoded is left out and named.
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
    return plan(inventory, request, null);
  }

  /** @param image where return instructions are decoded from; needed for such requests */
  static ProbePlan plan(Inventory inventory, ProbeRequest request, ModuleImage image)
      throws ProbePlanException {
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
              + inventory.names(), true);
        }
        wanted.add(e);
      }
    }
    if (request.returnInstructions()) {
      return planReturns(wanted, request, image);
    }
    List<ProbeSite> sites = new ArrayList<>();
    List<String> omitted = new ArrayList<>();
    int perFunction = request.entrySlotsOnly() ? 1 : SLOTS_PER_FUNCTION;
    int slotsLeft = request.slotsPerThread();
    for (Inventory.Export e : wanted) {
      if (slotsLeft < perFunction) {
        omitted.add(e.name() + ": no hardware breakpoint slot left (" + request.slotsPerThread()
            + " per thread, " + perFunction + " per function); trace it in another session"
            + " or name fewer functions with --functions");
        continue;
      }
      sites.add(new ProbeSite(e.name(), e.version(), e.address(), ProbeSite.Kind.ENTRY));
      slotsLeft -= perFunction;
    }
    return new ProbePlan(sites, omitted);
  }

  /** Largest function decoded; the vDSO's are a few hundred bytes to a few KiB. */
  static final int MAX_FUNCTION_BYTES = 1 << 16;

  private static ProbePlan planReturns(Set<Inventory.Export> wanted, ProbeRequest request,
      ModuleImage image) throws ProbePlanException {
    if (image == null) {
      throw new ProbePlanException("return instructions need the image");
    }
    List<ProbeSite> sites = new ArrayList<>();
    List<ProbeExit> exits = new ArrayList<>();
    List<String> omitted = new ArrayList<>();
    int slotsLeft = request.slotsPerThread();
    for (Inventory.Export e : wanted) {
      ReturnInstructions.Result rets = returns(image, e);
      if (!rets.ok()) {
        omitted.add(e.name() + ": its return instructions cannot be found (" + rets.refusal()
            + "); trace it with --backend ptrace");
        continue;
      }
      int needed = 1 + rets.returns().size();
      if (needed > slotsLeft) {
        omitted.add(e.name() + ": needs " + needed + " hardware breakpoint slots (entry and "
            + rets.returns().size() + " ret), " + slotsLeft + " of " + request.slotsPerThread()
            + " left; trace it in another session or name fewer functions with --functions");
        continue;
      }
      sites.add(new ProbeSite(e.name(), e.version(), e.address(), ProbeSite.Kind.ENTRY));
      exits.add(new ProbeExit(e.address(), rets.returns(),
          Decoders.forFunction(e.name()).copies()));
      slotsLeft -= needed;
    }
    return new ProbePlan(sites, omitted, exits);
  }

  private static ReturnInstructions.Result returns(ModuleImage image, Inventory.Export e) {
    if (e.size() <= 0 || e.size() > MAX_FUNCTION_BYTES) {
      return new ReturnInstructions.Result(List.of(), "symbol size " + e.size());
    }
    byte[] code = new byte[(int) e.size()];
    try {
      if (image.read(e.address(), code, 0, code.length) != code.length) {
        return new ReturnInstructions.Result(List.of(), "the image is short");
      }
    } catch (ImageReadException ex) {
      return new ReturnInstructions.Result(List.of(), "unreadable: " + ex.getMessage());
    }
    return ReturnInstructions.find(code, e.address());
  }
}
