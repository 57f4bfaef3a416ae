package dev.polystack.host.modules;

/** A mapped module's file cannot be opened or is not the file that is mapped. */
public final class ModuleOpenException extends Exception {
  private static final long serialVersionUID = 1L;

  private final String reason;

  public ModuleOpenException(String reason, String message) {
    super(message);
    this.reason = reason;
  }

  /** Short token for counters: {@code not_elf}, {@code replaced}, {@code unreadable}, ... */
  public String reason() {
    return reason;
  }
}
