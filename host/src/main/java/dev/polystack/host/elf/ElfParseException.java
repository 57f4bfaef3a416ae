package dev.polystack.host.elf;

/**
 * Thrown when ELF input is malformed, truncated or exceeds a safety limit. This is the only
 * exception the ELF reader raises for bad input, so callers parsing untrusted images (other
 * processes' memory, arbitrary files) need a single catch clause.
 */
public final class ElfParseException extends Exception {
  private static final long serialVersionUID = 1L;

  public ElfParseException(String message) {
    super(message);
  }

  public ElfParseException(String message, Throwable cause) {
    super(message, cause);
  }
}
