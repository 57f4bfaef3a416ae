package dev.polystack.host.embed;

/**
 * A profiling session that could not start. The message is one line: what failed, why, and
 * what to do ({@code cannot profile: BPF needs root or CAP_BPF and CAP_PERFMON: run ...}).
 */
public final class ProfilerException extends Exception {
  private static final long serialVersionUID = 1L;

  /** An exception with {@code message}, one line. */
  public ProfilerException(String message) {
    super(message);
  }

  /** An exception with {@code message}, one line, and what caused it. */
  public ProfilerException(String message, Throwable cause) {
    super(message, cause);
  }
}
