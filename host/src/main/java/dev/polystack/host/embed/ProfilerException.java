package dev.polystack.host.embed;

/**
 * A profiling session that could not start. The message is one line: what failed, why, and
 * what to do ({@code cannot profile: BPF needs root or CAP_BPF and CAP_PERFMON: run ...}).
 */
public final class ProfilerException extends Exception {
  private static final long serialVersionUID = 1L;

  public ProfilerException(String message) {
    super(message);
  }

  public ProfilerException(String message, Throwable cause) {
    super(message, cause);
  }
}
