package dev.polystack.plugin.api;

/**
 * First level of the runtime plug-in lifecycle: recognise the runtime in one module image.
 *
 * <p>The host calls {@link #inspect} once per distinct binary (cached by build id or file
 * identity) for every mapped module, so it must be cheap when the answer is "not mine": check
 * exported symbols or a string first, never the file name.
 *
 * @since 1.0
 */
public interface RuntimePlugin extends Plugin {

  /**
   * Inspects a module. Never throws for bad content: a module that looks like the runtime but
   * cannot be handled is {@link Inspection.Unsupported} with the failed check named.
   */
  Inspection inspect(ModuleImage image);

  /**
   * The values this plug-in's walks measure per CPU sample (since API 2.0), at most {@link
   * SampleType#MAX_TYPES}, each named under {@code <plug-in id>.}; the host asks once, at load,
   * and refuses the plug-in (with one line) when a type is outside its namespace or declared
   * twice. Each {@link SampleWalk} then reports its values by type name.
   *
   * @since 2.0
   */
  default java.util.List<SampleType> sampleTypes() {
    return java.util.List.of();
  }
}
