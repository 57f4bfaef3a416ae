package dev.polystack.plugin.api;

/**
 * A probe request cannot be planned; the message says why and what is available.
 *
 * @since 1.0
 */
public final class ProbePlanException extends Exception {
  private static final long serialVersionUID = 1L;

  public ProbePlanException(String message) {
    super(message);
  }
}
