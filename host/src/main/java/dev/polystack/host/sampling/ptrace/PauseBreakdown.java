package dev.polystack.host.sampling.ptrace;

import java.util.Arrays;
import java.util.Optional;

/**
 * Optional diagnostics: where the target's pause per sample goes (interrupt, wait for the stop,
 * GETREGS, stack copy, walk while stopped, CONT), what the walk after the resume costs (not part
 * of the pause), and how many reads of target memory each sample made while the thread was
 * stopped beyond the stack copy (system calls the pause paid for). Off unless the JVM runs with
 * {@code -Dpolystack.pauseBreakdown=true} (e.g. through POLYSTACK_JAVA_OPTS); when off, the
 * sampler holds {@link #OFF}, which records nothing. Printed on stderr at the end of a sampling
 * loop.
 */
class PauseBreakdown {
  /** Records nothing and reports nothing: the breakdown when it is off. */
  static final PauseBreakdown OFF = new PauseBreakdown();

  static final int INTERRUPT = 0;
  static final int WAIT = 1;
  static final int GETREGS = 2;
  static final int READ = 3;
  static final int WALK = 4;
  static final int CONT = 5;
  /** The walk after CONT, on the stack copy: host time, not target pause. */
  static final int WALK_AFTER = 6;
  /** A count, not a time: page reads of target memory while stopped, beyond the copy. */
  static final int STOPPED_READS = 7;
  private static final String[] NAMES = {"interrupt", "wait", "getregs", "read", "walk", "cont",
      "walk after resume", "reads while stopped"};
  private static final int LIMIT = 1 << 16;

  private PauseBreakdown() { }

  /** A breakdown that records, if {@code enabled}, else {@link #OFF}. */
  static PauseBreakdown of(boolean enabled) {
    return enabled ? new Recording() : OFF;
  }

  /** A sample's pause starts (the interrupt is about to be sent). */
  void start(long nanos) { }

  /** Charges the time since the last mark to {@code phase}. */
  void mark(int phase) { }

  /** Records a count (not a time) for the current sample. */
  void count(int phase, long n) { }

  /** Keeps the phases of a completed sample (one that was stopped, read and resumed). */
  void commit() { }

  /** The report for stderr, or empty when off. */
  Optional<String> report() {
    return Optional.empty();
  }

  private static final class Recording extends PauseBreakdown {
    private final long[][] values = new long[NAMES.length][LIMIT];
    private final long[] current = new long[NAMES.length];
    /** When each kept sample started, for the slowest ones in the report: a tail has a time. */
    private final long[] starts = new long[LIMIT];
    private long first = -1;
    private long started;
    private long last;
    private int count;

    @Override
    void start(long nanos) {
      Arrays.fill(current, 0);
      last = nanos;
      started = nanos;
      if (first < 0) {
        first = nanos;
      }
    }

    @Override
    void mark(int phase) {
      long now = System.nanoTime();
      current[phase] += now - last;
      last = now;
    }

    @Override
    void count(int phase, long n) {
      current[phase] += n;
    }

    @Override
    void commit() {
      if (count < LIMIT) {
        for (int i = 0; i < NAMES.length; i++) {
          values[i][count] = current[i];
        }
        starts[count] = started;
        count++;
      }
    }

    @Override
    Optional<String> report() {
      StringBuilder sb = new StringBuilder("pause breakdown over ").append(count)
          .append(" samples (median/p99 us; reads: median/p99 count):");
      for (int i = 0; i < NAMES.length; i++) {
        long[] sorted = Arrays.copyOf(values[i], count);
        Arrays.sort(sorted);
        double unit = i == STOPPED_READS ? 1 : 1e3;
        sb.append(i == 0 ? " " : ", ").append(NAMES[i]).append(' ')
            .append(String.format(java.util.Locale.ROOT, "%.1f/%.1f", at(sorted, 0.5) / unit,
                at(sorted, 0.99) / unit));
      }
      return Optional.of(sb.append(slowest(5)).toString());
    }

    /** The n samples with the longest pause: their number, start since the first, and phases. */
    private String slowest(int n) {
      Integer[] order = new Integer[count];
      for (int k = 0; k < count; k++) {
        order[k] = k;
      }
      Arrays.sort(order, (a, b) -> Long.compare(pause(b), pause(a)));
      StringBuilder sb = new StringBuilder("; slowest:");
      for (int k = 0; k < Math.min(n, count); k++) {
        int s = order[k];
        sb.append(String.format(java.util.Locale.ROOT, " #%d at %.0f ms (", s,
            (starts[s] - first) / 1e6));
        for (int i = INTERRUPT; i <= CONT; i++) {
          sb.append(i == INTERRUPT ? "" : " ").append(String.format(java.util.Locale.ROOT, "%.0f",
              values[i][s] / 1e3));
        }
        sb.append(" us)");
      }
      return sb.toString();
    }

    private long pause(int sample) {
      long sum = 0;
      for (int i = INTERRUPT; i <= CONT; i++) {
        sum += values[i][sample];
      }
      return sum;
    }

    private static long at(long[] sorted, double q) {
      if (sorted.length == 0) {
        return 0;
      }
      int index = (int) Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
      return sorted[index];
    }
  }
}
