package dev.polystack.otel.counters;

/** What a counter counts, which decides where a summary, a header or a metric shows it. */
public enum CounterKind {
  /** Samples (or records standing for them) missing from the profile. */
  LOSS("loss"),
  /** Stacks that end in an error frame of this name. */
  ERROR_FRAME("error_frame"),
  /** What the tick capture did (ticks seen, records made, plan outcomes): not a loss. */
  CAPTURE_FIGURE("capture_figure"),
  /** How polystack read the target (a module it could not open, times merged): not a loss. */
  NOTE("note"),
  /** A plug-in's own count of how it read the target, named {@code plugin.<id>.<name>}. */
  PLUGIN_NOTE("plugin_note");

  private final String id;

  CounterKind(String id) {
    this.id = id;
  }

  /** The name in machine-readable output ({@code --stats-json}, metric attributes, docs). */
  public String id() {
    return id;
  }
}
