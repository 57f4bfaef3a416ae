package dev.polystack.otel.otlp;

import java.util.Objects;

/**
 * What one export (after its retries) came to.
 *
 * @param accepted the receiver took the request (possibly in part, see {@code rejected})
 * @param rejected items the receiver rejected: partial_success.rejected_profiles, or 0
 * @param message the receiver's message (partial_success.error_message, the gRPC status or the
 *     HTTP body's google.rpc.Status), or why it could not be reached; empty on plain success
 * @param attempts how many times the request was sent
 */
public record ExportResult(boolean accepted, long rejected, String message, int attempts) {
  public ExportResult {
    Objects.requireNonNull(message, "message");
  }

  static ExportResult success(int attempts) {
    return new ExportResult(true, 0, "", attempts);
  }

  static ExportResult failure(String message, int attempts) {
    return new ExportResult(false, 0, message, attempts);
  }

  /** Accepted whole: no rejected items, no warning. */
  public boolean complete() {
    return accepted && rejected == 0 && message.isEmpty();
  }
}
