package dev.polystack.host.sampling.nostop;

import dev.polystack.host.bpf.PlanEncoder;
import dev.polystack.host.plugins.PluginGuard;
import dev.polystack.host.process.RuntimeBinding;
import dev.polystack.host.process.TargetProcess;
import dev.polystack.host.sampling.SampleSink;
import dev.polystack.otel.counters.HostCounters;
import dev.polystack.plugin.api.Capability;
import dev.polystack.plugin.api.CapturePlan;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.function.Consumer;

/**
 * The runtimes' capture plans of one process and their place in the kernel, for both programs
 * that capture a stack (the tick's {@link ProcessTicks}, the allocation's {@link AllocSampler}).
 * One per process: it remembers which plans it refused, so each is counted and warned about
 * once (docs/capture-plans.md, "Bounds").
 */
final class RuntimePlans {
  /**
   * Plug-in plans a process runs: the capture program runs {@link ProcessTicks#MAX_PLANS} and
   * keeps the last for the pages walks keep reading ({@link LearnedPages}).
   */
  static final int BUDGET = ProcessTicks.MAX_PLANS - 1;

  /**
   * A plug-in instance's plan, with what orders it and names it in a warning.
   *
   * @param index its place in the instance's {@code capturePlans()}
   */
  record Candidate(String pluginId, String module, long codeStart, int index, CapturePlan plan) {
    Candidate {
      Objects.requireNonNull(pluginId, "pluginId");
      Objects.requireNonNull(module, "module");
      Objects.requireNonNull(plan, "plan");
    }

    /** An instance's only plan. */
    Candidate(String pluginId, String module, long codeStart, CapturePlan plan) {
      this(pluginId, module, codeStart, 0, plan);
    }
  }

  /**
   * The order plans are kept in: plug-in id (the load order), module path, code address, then
   * the instance's own order.
   */
  static final Comparator<Candidate> ORDER = Comparator.comparing(Candidate::pluginId)
      .thenComparing(Candidate::module)
      .thenComparing(Candidate::codeStart, Long::compareUnsigned)
      .thenComparingInt(Candidate::index);

  private final int pid;
  private final Consumer<String> warn;
  private final Set<CapturePlan> refused = new HashSet<>();
  private boolean warned;

  /** @param warn receives the one warning line this process gets for a refused plan */
  RuntimePlans(int pid, Consumer<String> warn) {
    this.pid = pid;
    this.warn = Objects.requireNonNull(warn, "warn");
  }

  /** The plans of the process's runtimes that declare {@link Capability#CAPTURE_AT_TICK}. */
  static List<Candidate> candidates(TargetProcess target, PluginGuard guard) {
    List<Candidate> out = new ArrayList<>();
    for (RuntimeBinding b : target.table().bindings()) {
      if (!b.plugin().descriptor().capabilities().contains(Capability.CAPTURE_AT_TICK)) {
        continue;
      }
      List<CapturePlan> plans = guard.call(b.plugin(), "capturePlans",
          b.instance()::capturePlans).orElse(List.of());
      long start = b.ranges().isEmpty() ? 0 : b.ranges().get(0).start();
      for (int i = 0; i < plans.size(); i++) {
        CapturePlan plan = plans.get(i);
        out.add(new Candidate(b.plugin().id(), b.module(), start, i,
            plan == null ? CapturePlan.NONE : plan));
      }
    }
    return out;
  }

  /**
   * The distinct non-empty plans of {@code candidates} in {@link #ORDER}, the first
   * {@link #BUDGET} of them. Each plan beyond is counted as {@code capture_plan_refused} the
   * first time it is refused, and the first refusal in this process gets one warning line
   * naming the plug-in.
   */
  List<CapturePlan> select(List<Candidate> candidates, SampleSink sink) {
    List<Candidate> sorted = new ArrayList<>(candidates);
    sorted.sort(ORDER);
    List<CapturePlan> kept = new ArrayList<>();
    for (Candidate c : sorted) {
      if (c.plan().isEmpty() || kept.contains(c.plan())) {
        continue;
      }
      if (kept.size() < BUDGET) {
        kept.add(c.plan());
        continue;
      }
      if (refused.add(c.plan())) {
        sink.lost(HostCounters.CAPTURE_PLAN_REFUSED);
        if (!warned) {
          warned = true;
          warn.accept("process " + pid + ": capture plan of plug-in '" + c.pluginId() + "' ("
              + c.module() + ") not run at the tick: a process runs at most " + BUDGET
              + " plug-in plans, kept by plug-in id (docs/capture-plans.md); its reads go to"
              + " the live process, and every plan refused is counted as capture_plan_refused");
        }
      }
    }
    return kept;
  }

  /**
   * Puts {@code wanted} in the process's plan slots unless {@code installed} already is that;
   * returns what the slots hold afterwards. A refusal is counted and leaves {@code installed}.
   */
  static List<CapturePlan> install(ProcessTicks.PlanSlots slots, int pid,
      List<CapturePlan> wanted, List<CapturePlan> installed, SampleSink sink) {
    if (wanted.equals(installed)) {
      return installed;
    }
    try {
      slots.clearPlans(pid);
      for (int i = 0; i < wanted.size(); i++) {
        slots.setPlan(pid, i, PlanEncoder.encode(wanted.get(i)));
      }
      return List.copyOf(wanted);
    } catch (RuntimeException e) {
      sink.lost(HostCounters.CAPTURE_PLAN_REFUSED);
      return installed;
    }
  }
}
