package dev.polystack.host.embed;

/**
 * Receives each interval of a {@link ProfilingSession}, in order, on the session's listener
 * thread ({@code polystack-embed-listener}), never two at once. It may take its time: the
 * capture goes on meanwhile, and intervals that find {@link ProfilerConfig#listenerQueue()}
 * intervals waiting are dropped and counted. A listener that throws is counted ({@link
 * ProfilerStats#listenerFailures()}) and called again for the next interval.
 */
@FunctionalInterface
public interface IntervalListener {
  /** One interval's profiles; {@link ProfileInterval#last()} for the one {@code stop()} cut. */
  void onInterval(ProfileInterval interval) throws Exception;
}
