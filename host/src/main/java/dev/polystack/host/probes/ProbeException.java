package dev.polystack.host.probes;

/** A probe session cannot start or go on; the message is one line for the user. */
public final class ProbeException extends Exception {
  private final boolean badRequest;

  public ProbeException(String message) {
    this(message, false);
  }

  /** @param badRequest the user asked for what cannot be (exit code 2, not 1) */
  public ProbeException(String message, boolean badRequest) {
    super(message);
    this.badRequest = badRequest;
  }

  /** Whether the command line asked for something that cannot be, such as a function name. */
  public boolean badRequest() {
    return badRequest;
  }
}
