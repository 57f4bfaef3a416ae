package dev.polystack.host.bpf;

/**
 * A map operation on a loaded capture engine failed (e.g. E2BIG: the targets map is full).
 * Unchecked: after a successful load these mean a bug or exhausted kernel resources, not a
 * condition callers routinely handle.
 */
public final class BpfException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  private final int errno;

  BpfException(String what, int error) {
    super(what + " failed: " + Bpf.describe(error));
    this.errno = Math.abs(error);
  }

  /** The positive errno (or libbpf 4000+ code). */
  public int errno() {
    return errno;
  }
}
