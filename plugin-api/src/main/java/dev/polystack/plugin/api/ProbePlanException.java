package dev.polystack.plugin.api;

/**
 * A probe request cannot be planned; the message says why and what is available.
 *
 * @since 1.0
 */
public final class ProbePlanException extends Exception {
  private static final long serialVersionUID = 1L;

  private final boolean badRequest;

  public ProbePlanException(String message) {
    this(message, false);
  }

  /**
   * Since API 1.3.
   *
   * @param badRequest the request names what no image could have (an unknown function): the
   *     user's mistake, which the host reports as a usage error
   * @since 1.3
   */
  public ProbePlanException(String message, boolean badRequest) {
    super(message);
    this.badRequest = badRequest;
  }

  /** Whether the request itself is wrong rather than the image unable to serve it. */
  public boolean badRequest() {
    return badRequest;
  }
}
