package dev.polystack.plugin.api;

/**
 * A plug-in that traces calls with probes (hardware breakpoints armed by the host). It plans
 * where probes go in a module and turns hits into call records; the host's probe backend does
 * the arming, so the plug-in never touches the target.
 *
 * @since 1.0
 */
public interface ProbePlugin extends Plugin {

  /**
   * Whether this plug-in plans probes in the given module, judged by content. The vDSO tracer
   * answers for the {@code [vdso]} image.
   */
  boolean accepts(ModuleImage image);

  /**
   * Plans probe sites for the requested functions within the per-thread slot budget.
   *
   * @throws ProbePlanException when a request cannot be met at all, e.g. an unknown function
   *     (the message lists what exists)
   */
  ProbePlan plan(ModuleImage image, ProbeRequest request) throws ProbePlanException;

  /** A monitor that receives the hits of one plan in one process. */
  ProbeMonitor monitor(ProbePlan plan);
}
