package dev.polystack.host.inspect;

import dev.polystack.plugin.api.CodeRange;
import dev.polystack.plugin.api.DiscoveredOffset;
import java.util.List;
import java.util.Objects;

/**
 * What every plug-in said about one module.
 *
 * @param module path or pseudo name
 * @param buildId GNU build id or empty
 * @param bias runtime minus link-time address in the inspected process; 0 for a file on disk
 * @param findings one per plug-in that recognised the module
 */
public record ModuleReport(String module, String buildId, long bias, List<Finding> findings) {
  public ModuleReport {
    Objects.requireNonNull(module, "module");
    Objects.requireNonNull(buildId, "buildId");
    findings = List.copyOf(findings);
  }

  /** Kind of answer a plug-in gave. */
  public enum Status {
    SUPPORTED,
    UNSUPPORTED,
    PROBES
  }

  /**
   * One plug-in's answer. Code ranges are runtime addresses when inspecting a process.
   *
   * @param summary runtime name, the unsupported reason, or the probe plan summary
   */
  public record Finding(String plugin, Status status, String summary, List<String> evidence,
      List<CodeRange> codeRanges, List<DiscoveredOffset> offsets) {
    public Finding {
      Objects.requireNonNull(plugin, "plugin");
      Objects.requireNonNull(status, "status");
      Objects.requireNonNull(summary, "summary");
      evidence = List.copyOf(evidence);
      codeRanges = List.copyOf(codeRanges);
      offsets = List.copyOf(offsets);
    }
  }
}
