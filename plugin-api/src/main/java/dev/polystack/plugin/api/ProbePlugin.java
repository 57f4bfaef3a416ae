package dev.polystack.plugin.api;

import java.util.Optional;

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

  /**
   * A decoder for the calls of {@code symbol}, a function of {@code image}, at probe sites the
   * host places itself ({@code polystack probe --monitor args MODULE:SYMBOL}): the host asks
   * every loaded probe plug-in when it resolves such a site at the function's entry, and takes
   * the first decoder offered (plug-ins in order of their ids). Independent of {@link
   * #accepts}: a plug-in may decode functions of modules whose probes it does not plan, such as
   * the C library's wrappers of the calls it knows. Judge by the symbol (its name and version)
   * and, where names are ambiguous, the image's content, never by the file name alone; answer
   * quickly and empty for a function you do not know. The image is open only during this call:
   * the decoder must not keep it.
   *
   * @param image the module that holds the function, from a file or from memory ({@code
   *     [vdso]})
   * @param symbol the function's symbol as the host resolved the site (for the vDSO, possibly
   *     the {@code __vdso_} name)
   * @since 1.7
   */
  default Optional<ArgumentDecoder> argumentDecoder(ModuleImage image, ModuleSymbol symbol) {
    return Optional.empty();
  }
}
