package dev.polystack.host.probes;

/** A probe session cannot start or go on; the message is one line for the user. */
public final class ProbeException extends Exception {
  public ProbeException(String message) {
    super(message);
  }
}
