package dev.polystack.otel.otlp;

import java.time.Duration;

/** The retry loop both transports share. */
final class Retrier {

  /** The answer of one attempt. */
  sealed interface Outcome permits Done, Retryable {}

  /** Final: success, partial success or a non-retryable failure. */
  record Done(ExportResult result) implements Outcome {}

  /** Worth another try; {@code retryAfter} is the server's wish, or null. */
  record Retryable(String message, Duration retryAfter) implements Outcome {}

  interface Attempt {
    Outcome run(int attempt);
  }

  private Retrier() {}

  static ExportResult run(RetryPolicy policy, Attempt attempt) {
    String last = "";
    for (int i = 1; i <= policy.maxAttempts(); i++) {
      Outcome outcome = attempt.run(i);
      if (outcome instanceof Done done) {
        return done.result();
      }
      Retryable r = (Retryable) outcome;
      last = r.message();
      if (i == policy.maxAttempts()) {
        break;
      }
      Duration wait = policy.backoff(i);
      if (r.retryAfter() != null && r.retryAfter().compareTo(wait) > 0) {
        // Honour the server, but a minute at most: the exporter's queue is waiting.
        wait = r.retryAfter().compareTo(Duration.ofMinutes(1)) > 0 ? Duration.ofMinutes(1)
            : r.retryAfter();
      }
      try {
        Thread.sleep(wait.toMillis());
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return ExportResult.failure(last + " (retries interrupted)", i);
      }
    }
    return ExportResult.failure(last + " (gave up after " + policy.maxAttempts()
        + " attempts)", policy.maxAttempts());
  }
}
