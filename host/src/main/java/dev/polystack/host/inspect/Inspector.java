package dev.polystack.host.inspect;

import dev.polystack.host.plugins.LoadedPlugin;
import dev.polystack.host.plugins.PluginGuard;
import dev.polystack.host.plugins.PluginRegistry;
import dev.polystack.plugin.api.CodeRange;
import dev.polystack.plugin.api.Inspection;
import dev.polystack.plugin.api.ModuleImage;
import dev.polystack.plugin.api.ProbePlan;
import dev.polystack.plugin.api.ProbePlanException;
import dev.polystack.plugin.api.ProbePlugin;
import dev.polystack.plugin.api.ProbeRequest;
import dev.polystack.plugin.api.ProbeSite;
import dev.polystack.plugin.api.RuntimeBinary;
import dev.polystack.plugin.api.RuntimePlugin;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/** Asks every loaded plug-in about one module image, through the guard. */
public final class Inspector {
  /** Hardware breakpoint slots per thread on x86-64 (DR0..DR3). */
  public static final int DEBUG_REGISTERS = 4;

  private final PluginRegistry registry;
  private final PluginGuard guard;

  public Inspector(PluginRegistry registry, PluginGuard guard) {
    this.registry = registry;
    this.guard = guard;
  }

  public ModuleReport inspect(ModuleImage image, long bias) {
    List<ModuleReport.Finding> findings = new ArrayList<>();
    for (LoadedPlugin p : registry.runtimePlugins()) {
      RuntimePlugin plugin = (RuntimePlugin) p.plugin();
      Optional<Inspection> answer = guard.call(p, "inspect", () -> plugin.inspect(image));
      if (answer.isEmpty()) {
        continue;
      }
      if (answer.get() instanceof Inspection.Unsupported u) {
        findings.add(new ModuleReport.Finding(p.id(), ModuleReport.Status.UNSUPPORTED,
            u.reason(), u.evidence(), List.of(), List.of()));
      } else if (answer.get() instanceof Inspection.Supported s) {
        findings.add(supported(p, s.binary(), bias));
      }
    }
    for (LoadedPlugin p : registry.probePlugins()) {
      ProbePlugin plugin = (ProbePlugin) p.plugin();
      if (!guard.call(p, "accepts", () -> plugin.accepts(image)).orElse(false)) {
        continue;
      }
      findings.add(guard.call(p, "plan", () -> probes(p, plugin, image, bias))
          .orElse(new ModuleReport.Finding(p.id(), ModuleReport.Status.UNSUPPORTED,
              "the plug-in failed while planning probes", List.of(), List.of(), List.of())));
    }
    return new ModuleReport(image.name(), image.buildId().orElse(""), bias, findings);
  }

  private ModuleReport.Finding supported(LoadedPlugin p, RuntimeBinary binary, long bias) {
    String runtime = guard.call(p, "runtime", binary::runtime).orElse("?");
    List<String> evidence = guard.call(p, "evidence", binary::evidence).orElse(List.of());
    List<CodeRange> ranges = guard.call(p, "codeRanges", binary::codeRanges).orElse(List.of())
        .stream().map(r -> r.shift(bias)).toList();
    var offsets = guard.call(p, "offsets", binary::offsets).orElse(List.of());
    return new ModuleReport.Finding(p.id(), ModuleReport.Status.SUPPORTED, runtime, evidence,
        ranges, offsets);
  }

  private static ModuleReport.Finding probes(LoadedPlugin p, ProbePlugin plugin,
      ModuleImage image, long bias) {
    ProbePlan plan;
    try {
      plan = plugin.plan(image, new ProbeRequest(List.of(), DEBUG_REGISTERS));
    } catch (ProbePlanException e) {
      return new ModuleReport.Finding(p.id(), ModuleReport.Status.UNSUPPORTED, e.getMessage(),
          List.of(), List.of(), List.of());
    }
    List<String> lines = new ArrayList<>();
    List<CodeRange> sites = new ArrayList<>();
    for (ProbeSite s : plan.sites()) {
      lines.add(s.kind().name().toLowerCase(java.util.Locale.ROOT) + " probe on " + s.function()
          + (s.version().isEmpty() ? "" : "@" + s.version()));
      sites.add(new CodeRange(s.address() + bias, s.address() + bias + 1, s.function()));
    }
    plan.omitted().forEach(o -> lines.add("left out: " + o));
    return new ModuleReport.Finding(p.id(), ModuleReport.Status.PROBES,
        plan.sites().size() + " probe site(s) planned with " + DEBUG_REGISTERS
            + " breakpoint slots per thread", lines, sites, List.of());
  }
}
