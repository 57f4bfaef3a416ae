package dev.polystack.otel.otlp;

import java.time.Duration;

/**
 * Retries of one export on a retryable answer (gRPC UNAVAILABLE and friends, HTTP 429 and
 * 502-504): exponential backoff with jitter, a server's Retry-After wins when it says longer.
 *
 * @param maxAttempts attempts in all, the first included
 * @param initialBackoff wait before the second attempt
 * @param maxBackoff upper bound of one wait
 * @param multiplier growth of the wait per attempt
 */
public record RetryPolicy(int maxAttempts, Duration initialBackoff, Duration maxBackoff,
    double multiplier) {
  /** The OpenTelemetry SDK's defaults: 5 attempts, 1 s growing by 1.5 up to 5 s. */
  public static final RetryPolicy DEFAULT =
      new RetryPolicy(5, Duration.ofSeconds(1), Duration.ofSeconds(5), 1.5);

  public RetryPolicy {
    if (maxAttempts < 1 || maxAttempts > 100) {
      throw new IllegalArgumentException("retry attempts must be 1..100, got " + maxAttempts);
    }
    if (initialBackoff.isNegative() || maxBackoff.compareTo(initialBackoff) < 0) {
      throw new IllegalArgumentException("retry backoff must be 0 <= initial <= max");
    }
    if (multiplier < 1) {
      throw new IllegalArgumentException("retry backoff multiplier must be >= 1");
    }
  }

  /** The wait before attempt {@code attempt + 1} (attempt counts from 1), with jitter. */
  Duration backoff(int attempt) {
    double nanos = initialBackoff.toNanos() * Math.pow(multiplier, attempt - 1);
    long capped = (long) Math.min(nanos, maxBackoff.toNanos());
    // Full jitter on the upper fifth keeps many agents from retrying in lockstep.
    long jitter = (long) (capped * 0.2 * Math.random());
    return Duration.ofNanos(capped - jitter);
  }
}
