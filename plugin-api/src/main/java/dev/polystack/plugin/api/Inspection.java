package dev.polystack.plugin.api;

import java.util.List;
import java.util.Objects;

/**
 * Outcome of {@link RuntimePlugin#inspect}: three distinct answers, never null.
 *
 * @since 1.0
 */
public sealed interface Inspection {

  /** The module does not contain this plug-in's runtime. */
  static Inspection notMine() {
    return NotMine.INSTANCE;
  }

  /** The module is not this runtime. */
  enum NotMine implements Inspection {
    INSTANCE
  }

  /**
   * The module contains the runtime, but this plug-in cannot handle it; {@code reason} names the
   * check that failed (and the build id), so the user can report it.
   *
   * @param evidence what made the plug-in recognise the runtime
   */
  record Unsupported(String reason, List<String> evidence) implements Inspection {
    public Unsupported {
      Objects.requireNonNull(reason, "reason");
      evidence = List.copyOf(evidence);
    }
  }

  /** The module contains the runtime and the plug-in can handle it. */
  record Supported(RuntimeBinary binary) implements Inspection {
    public Supported {
      Objects.requireNonNull(binary, "binary");
    }
  }
}
