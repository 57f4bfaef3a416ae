package dev.polystack.host.bpf;

/**
 * The BPF capture engine could not be set up. The message is one line: what failed, why (the
 * errno name) and what to do; callers print it as is and fall back to another backend.
 */
public final class BpfLoadException extends Exception {
  private static final long serialVersionUID = 1L;

  BpfLoadException(String message) {
    super(oneLine(message));
  }

  BpfLoadException(String message, Throwable cause) {
    super(oneLine(message), cause);
  }

  /** "{@code what} failed: EPERM (operation not permitted; detail): {@code advice}". */
  static BpfLoadException of(String what, int error, String detail, String advice) {
    String why = Bpf.describe(error);
    if (detail != null && !detail.isBlank()) {
      why = why.substring(0, why.length() - 1) + "; " + detail + ")";
    }
    return new BpfLoadException(what + " failed: " + why + ": " + advice);
  }

  private static String oneLine(String s) {
    return s.replaceAll("\\s*[\\r\\n]+\\s*", " ").strip();
  }
}
