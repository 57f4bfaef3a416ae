package dev.polystack.host.sampling;

/** Sampling cannot start or go on; the message is one line for the user. */
public final class SamplingException extends Exception {
  private static final long serialVersionUID = 1L;

  public SamplingException(String message) {
    super(message);
  }
}
