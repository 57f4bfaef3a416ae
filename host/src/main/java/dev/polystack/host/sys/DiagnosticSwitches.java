package dev.polystack.host.sys;

import java.util.Properties;

/**
 * The {@code -Dpolystack.*} switches, read once from the JVM's system properties (set through
 * {@code POLYSTACK_JAVA_OPTS}). Each turns one of polystack's measured choices off, to compare
 * with the alternative it replaced, or turns a diagnostic on; none is needed in normal use.
 * docs/operations.md, "Diagnostic switches", lists them with the figures behind each choice.
 *
 * @param spinWait a tracer may poll briefly for a report it expects within microseconds before
 *     it sleeps in waitpid ({@code polystack.spinWait}, default on; off on one CPU regardless)
 * @param holdPriority the ptrace sampler's tracer runs at real-time priority while it holds a
 *     thread ({@code polystack.holdPriority}, default on)
 * @param cpuPlacement polystack's threads are kept off the CPUs the target runs on ({@code
 *     polystack.cpuPlacement}, default on)
 * @param blockingStopWait the ptrace sampler may sleep in waitpid for the stop of a thread just
 *     seen on a CPU instead of polling ({@code polystack.blockingStopWait}, default on)
 * @param prefetchWalk runtime walks may run after the resume from pages copied while stopped
 *     ({@code polystack.prefetchWalk}, default on)
 * @param stableLiveReads a walk from the copy may read objects that never change live when the
 *     copy lacks their page ({@code polystack.stableLiveReads}, default on)
 * @param pauseBreakdown the ptrace sampler prints where each pause went, on stderr at the end
 *     ({@code polystack.pauseBreakdown}, default off)
 */
public record DiagnosticSwitches(boolean spinWait, boolean holdPriority, boolean cpuPlacement,
    boolean blockingStopWait, boolean prefetchWalk, boolean stableLiveReads,
    boolean pauseBreakdown) {

  /** This JVM's switches, read when polystack first needs one. */
  public static final DiagnosticSwitches CURRENT = from(System.getProperties());

  /**
   * Reads the switches from {@code properties}: each on unless "false", pauseBreakdown off
   * unless "true".
   */
  public static DiagnosticSwitches from(Properties properties) {
    return new DiagnosticSwitches(
        on(properties, "polystack.spinWait"),
        on(properties, "polystack.holdPriority"),
        on(properties, "polystack.cpuPlacement"),
        on(properties, "polystack.blockingStopWait"),
        on(properties, "polystack.prefetchWalk"),
        on(properties, "polystack.stableLiveReads"),
        Boolean.parseBoolean(properties.getProperty("polystack.pauseBreakdown")));
  }

  private static boolean on(Properties properties, String name) {
    return !"false".equals(properties.getProperty(name));
  }
}
