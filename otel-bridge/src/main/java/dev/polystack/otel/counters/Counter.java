package dev.polystack.otel.counters;

import java.util.Objects;
import java.util.regex.Pattern;

/**
 * One counter as declared: its external name (the key in {@code -v}, {@code --stats-json},
 * file headers and metric attributes), what it counts, and how a user reads it.
 *
 * @param name lower_snake name; a plug-in's counters are {@code plugin.<id>.<name>}
 * @param kind what it counts
 * @param group the summary's group for a {@link CounterKind#LOSS}, {@link LossGroup#NONE} for
 *     every other kind
 * @param unit what one count is, singular ({@code sample}, {@code record}, {@code module})
 * @param description one sentence for a user: what happened and, where useful, what to do
 */
public record Counter(String name, CounterKind kind, LossGroup group, String unit,
    String description) {
  /** Names as they may reach a summary; declarations are held to lower_snake by a test. */
  private static final Pattern NAME = Pattern.compile("[A-Za-z0-9_.:-]{1,256}");

  public Counter {
    Objects.requireNonNull(name, "name");
    Objects.requireNonNull(kind, "kind");
    Objects.requireNonNull(group, "group");
    Objects.requireNonNull(unit, "unit");
    Objects.requireNonNull(description, "description");
    if (!NAME.matcher(name).matches()) {
      throw new IllegalArgumentException("counter name '" + name + "' is not 1 to 256 letters,"
          + " digits, '_', '.', ':' or '-'");
    }
    if ((kind == CounterKind.PLUGIN_NOTE) != name.startsWith(Counters.PLUGIN_PREFIX)) {
      throw new IllegalArgumentException("counter " + name + ": the names " + Counters.PLUGIN_PREFIX
          + "* are plug-in notes and plug-in notes have no other names");
    }
    if ((kind == CounterKind.LOSS) == (group == LossGroup.NONE)) {
      throw new IllegalArgumentException("counter " + name + ": a loss has a summary group and"
          + " nothing else has one");
    }
    if (unit.isBlank() || description.isBlank()) {
      throw new IllegalArgumentException("counter " + name + " needs a unit and a description");
    }
  }

  /** Whether the counter stands for samples missing from the profile. */
  public boolean isLoss() {
    return kind == CounterKind.LOSS;
  }
}
