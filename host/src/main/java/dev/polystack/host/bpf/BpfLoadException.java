package dev.polystack.host.bpf;

/**
 * The BPF capture engine could not be set up. The message is one line: what failed, why (the
 * errno name) and what to do; callers print it as is and fall back to another backend.
 */
public final class BpfLoadException extends Exception {
  private static final long serialVersionUID = 1L;
  private final int errno;

  BpfLoadException(String message) {
    super(oneLine(message));
    this.errno = 0;
  }

  private BpfLoadException(String message, int errno) {
    super(oneLine(message));
    this.errno = errno;
  }

  BpfLoadException(String message, Throwable cause) {
    super(oneLine(message), cause);
    this.errno = 0;
  }

  /** The errno the kernel or libbpf gave (positive), or 0 when there was none. */
  public int errno() {
    return errno;
  }

  /** "{@code what} failed: EPERM (operation not permitted; detail): {@code advice}". */
  static BpfLoadException of(String what, int error, String detail, String advice) {
    String why = Bpf.describe(error);
    if (detail != null && !detail.isBlank()) {
      why = why.substring(0, why.length() - 1) + "; " + detail + ")";
    }
    return new BpfLoadException(what + " failed: " + why + ": " + advice, Math.abs(error));
  }

  private static String oneLine(String s) {
    return s.replaceAll("\\s*[\\r\\n]+\\s*", " ").strip();
  }
}
