package dev.polystack.host.proc;

import java.nio.file.Path;
import java.util.Objects;

/**
 * A /proc file could not be read or did not have the expected format.
 *
 * <p>Checked on purpose: every /proc read can fail for reasons outside the caller's control (the
 * target exits, permissions, a kernel with a different format), so callers must decide what a
 * failure means for them instead of having a profiling session die from a stray runtime exception.
 */
public final class ProcReadException extends Exception {
  private static final long serialVersionUID = 1L;

  /** Why the read failed; lets callers skip vanished threads without parsing messages. */
  public enum Reason {
    /** The process or thread no longer exists (or never did). */
    NO_SUCH_PROCESS,
    /** The kernel refused access (ptrace access mode check or file permissions). */
    ACCESS_DENIED,
    /** The process exists but the file is absent (e.g. no exe link for a kernel thread). */
    NOT_AVAILABLE,
    /** The file is larger than the configured bound. */
    TOO_LARGE,
    /** The content does not have the expected format. */
    MALFORMED,
    /** Any other I/O failure. */
    IO_ERROR
  }

  private final Reason reason;
  private final String what;
  private final Path file;
  private final String detail;

  ProcReadException(Reason reason, String what, Path file, String detail, Throwable cause) {
    super("cannot read " + what + " from " + file + ": " + detail, cause);
    this.reason = Objects.requireNonNull(reason, "reason");
    this.what = Objects.requireNonNull(what, "what");
    this.file = Objects.requireNonNull(file, "file");
    this.detail = Objects.requireNonNull(detail, "detail");
  }

  static ProcReadException malformed(String what, Path file, String detail) {
    return new ProcReadException(Reason.MALFORMED, what, file, detail, null);
  }

  static ProcReadException malformed(String what, Path file, int lineNumber, String detail) {
    return new ProcReadException(
        Reason.MALFORMED, what, file, "line " + lineNumber + ": " + detail, null);
  }

  static ProcReadException noSuchProcess(String what, Path file, String subject, Throwable cause) {
    return new ProcReadException(
        Reason.NO_SUCH_PROCESS,
        what,
        file,
        subject + " does not exist (it may have exited)",
        cause);
  }

  /** What was being read, e.g. "memory maps". */
  public String what() {
    return what;
  }

  /** The file that was being read. */
  public Path file() {
    return file;
  }

  /** Why reading failed, in words. */
  public String detail() {
    return detail;
  }

  public Reason reason() {
    return reason;
  }
}
