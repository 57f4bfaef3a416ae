package dev.polystack.plugin.api;

import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * A value a runtime plug-in measures per CPU sample, beside the host's own sample count and CPU
 * time (since API 2.0): declared by {@link RuntimePlugin#sampleTypes()}, reported by each
 * {@link SampleWalk#values()}. pprof gets one more {@code sample_type} per declared type (so
 * {@code go tool pprof -sample_index=<name>} weighs stacks by it); OTLP one more profile per
 * type in the same scope, sharing the dictionary (docs/plugin-authoring.md, "Sample types").
 *
 * <p>A value adds up over samples (a count, a duration, a number of bytes): the host sums the
 * values of samples it merges. A sample that reports nothing for a type has 0 for it.
 *
 * @param name the type's name under the plug-in's namespace, e.g. {@code cpython.gil_held}: lower
 *     case letters, digits, {@code _} and {@code .}, at most 64 characters
 * @param unit what one unit of it is, as pprof names units: {@code count}, {@code nanoseconds},
 *     {@code bytes}, ...: lower case letters and {@code _}, at most 32 characters
 * @since 2.0
 */
public record SampleType(String name, String unit) {
  private static final Pattern NAME = Pattern.compile("[a-z0-9][a-z0-9._]{0,63}");
  private static final Pattern UNIT = Pattern.compile("[a-z][a-z_]{0,31}");
  /** Most sample types one plug-in declares. */
  public static final int MAX_TYPES = 4;

  public SampleType {
    Objects.requireNonNull(name, "name");
    Objects.requireNonNull(unit, "unit");
    if (!NAME.matcher(name).matches()) {
      throw new IllegalArgumentException("sample type name must match " + NAME.pattern()
          + ", got '" + name + "'");
    }
    if (!UNIT.matcher(unit).matches()) {
      throw new IllegalArgumentException("sample type unit must match " + UNIT.pattern()
          + ", got '" + unit + "'");
    }
  }

  /**
   * What is wrong with {@code types} as the declaration of plug-in {@code pluginId}, in one line,
   * or empty when nothing is: the host refuses such a plug-in at load, and the conformance kit
   * fails it, with this line.
   */
  public static Optional<String> declarationProblem(String pluginId, List<SampleType> types) {
    if (types == null) {
      return Optional.of("sampleTypes() returned null");
    }
    if (types.size() > MAX_TYPES) {
      return Optional.of("it declares " + types.size() + " sample types, more than "
          + MAX_TYPES);
    }
    Set<String> names = new HashSet<>();
    for (SampleType t : types) {
      if (t == null) {
        return Optional.of("sampleTypes() holds null");
      }
      if (!t.name().startsWith(pluginId + ".")) {
        return Optional.of("sample type '" + t.name() + "' is outside its namespace '"
            + pluginId + ".'");
      }
      if (!names.add(t.name())) {
        return Optional.of("sample type '" + t.name() + "' is declared twice");
      }
    }
    return Optional.empty();
  }
}
