package dev.polystack.host.session;

import dev.polystack.otel.model.ModuleInfo;
import dev.polystack.otel.model.Recording;
import dev.polystack.otel.model.Sample;
import dev.polystack.otel.model.StackTrace;
import dev.polystack.plugin.api.Frame;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Joins the recordings of several processes into one. Each sample gets its process as the
 * {@code process.pid} and {@code process.executable.name} attributes (OpenTelemetry's names),
 * which the outputs show (folded: a {@code process PID (NAME)} root frame). Address ranges of
 * different processes may overlap; a module that overlaps one already kept is left out of the
 * joined table, and the unnamed native frames of its process are labelled
 * {@code module+0xOFFSET} from their own table, so no frame is labelled from another process's.
 */
final class RecordingMerger {
  /** The sample attribute naming the process. */
  static final String PID = "process.pid";
  /** The sample attribute naming the process's executable. */
  static final String NAME = "process.executable.name";

  private RecordingMerger() {}


  /**
   * One result of several processes' results: their recordings joined, {@code runLosses} (the
   * run's own, not a process's) added to the losses, a part per process.
   *
   * @param periodNanos the run's sampling period, or 0 for the joined recording's own
   * @param first the result whose exit status and kill stand for the run's
   */
  static RecordSession.Result join(List<RecordSession.Result> parts, Map<String, Long> runLosses,
      long periodNanos, RecordSession.Result first, boolean byUser) {
    return join(parts, runLosses, periodNanos, first, byUser, true);
  }

  /**
   * {@link #join(List, Map, long, RecordSession.Result, boolean)}; without {@code
   * labelProcesses} (a record of one process, whose program may have changed by exec) the
   * samples do not name their process and the result has no part per process.
   */
  static RecordSession.Result join(List<RecordSession.Result> parts, Map<String, Long> runLosses,
      long periodNanos, RecordSession.Result first, boolean byUser, boolean labelProcesses) {
    List<RecordSession.ProcessPart> processes = new java.util.ArrayList<>();
    for (RecordSession.Result p : labelProcesses ? parts : List.<RecordSession.Result>of()) {
      Recording r = p.recording();
      processes.add(new RecordSession.ProcessPart(r.target().pid(), r.target().executableName(),
          p.summary().samples(), p.summary().losses(), p.targetGone()));
    }
    Recording merged = merge(parts.stream().map(RecordSession.Result::recording).toList(),
        labelProcesses);
    Map<String, Long> losses = new java.util.LinkedHashMap<>(merged.losses());
    runLosses.forEach((k, v) -> losses.merge(k, v, Long::sum));
    merged = new Recording(merged.target(), merged.startEpochNanos(), merged.endEpochNanos(),
        periodNanos > 0 ? periodNanos : merged.periodNanos(), merged.mode(), merged.modules(),
        merged.samples(), losses);
    boolean allGone = parts.stream().allMatch(RecordSession.Result::targetGone);
    return new RecordSession.Result(merged, summary(parts, losses), first.targetExit(), byUser,
        allGone, first.killedAtEnd(), processes);
  }

  /** The joined recording; the first part's target stands for the run. */
  static Recording merge(List<Recording> parts) {
    return merge(parts, true);
  }

  /** {@link #merge(List)}, the samples naming their process only if {@code labelProcesses}. */
  static Recording merge(List<Recording> parts, boolean labelProcesses) {
    if (parts.isEmpty()) {
      throw new IllegalArgumentException("no recording to merge");
    }
    Recording first = parts.get(0);
    if (parts.size() == 1 && !labelProcesses) {
      return first;
    }
    List<ModuleInfo> kept = new ArrayList<>();
    List<Sample> samples = new ArrayList<>();
    Map<String, Long> losses = new LinkedHashMap<>();
    long start = Long.MAX_VALUE;
    long end = Long.MIN_VALUE;
    for (Recording r : parts) {
      start = Math.min(start, r.startEpochNanos());
      end = Math.max(end, r.endEpochNanos());
      List<ModuleInfo> own = new ArrayList<>();
      for (ModuleInfo m : r.modules()) {
        if (overlapsAny(m, kept)) {
          own.add(m);
        } else {
          kept.add(m);
        }
      }
      r.losses().forEach((k, v) -> losses.merge(k, v, Long::sum));
      Map<String, String> process = labelProcesses ? Map.of(PID,
          Integer.toString(r.target().pid()), NAME, r.target().executableName()) : Map.of();
      Map<StackTrace, StackTrace> relabelled = new IdentityHashMap<>();
      for (Sample s : r.samples()) {
        Map<String, Object> attributes = new HashMap<>(s.attributes());
        attributes.putAll(process);
        StackTrace stack = own.isEmpty() ? s.stack()
            : relabelled.computeIfAbsent(s.stack(), st -> relabel(st, own));
        samples.add(new Sample(s.tid(), s.threadName(), s.epochNanos(), stack, attributes,
            s.periods(), s.count(), s.values(), s.pluginValues()));
      }
    }
    samples.sort(Comparator.comparingLong(Sample::epochNanos));
    return new Recording(first.target(), start, Math.max(start, end), first.periodNanos(),
        first.mode(), kept, samples, losses);
  }

  private static boolean overlapsAny(ModuleInfo m, List<ModuleInfo> kept) {
    for (ModuleInfo k : kept) {
      if (Long.compareUnsigned(m.start(), k.end()) < 0
          && Long.compareUnsigned(k.start(), m.end()) < 0) {
        return !(k.start() == m.start() && k.end() == m.end() && k.path().equals(m.path())
            && k.fileOffset() == m.fileOffset());
      }
    }
    return false;
  }

  /** Names the unnamed native frames that lie in {@code own} (modules not in the table). */
  private static StackTrace relabel(StackTrace stack, List<ModuleInfo> own) {
    List<Frame> frames = new ArrayList<>(stack.frames().size());
    boolean changed = false;
    for (Frame f : stack.frames()) {
      Frame out = f;
      if (Frame.NATIVE.equals(f.type()) && f.function().isEmpty()) {
        for (ModuleInfo m : own) {
          if (m.contains(f.address())) {
            out = new Frame(f.type(), f.address(),
                m.baseName() + "+0x" + Long.toHexString(m.fileOffsetOf(f.address())), f.file(),
                f.line(), f.startLine(), f.module(), f.attributes());
            changed = true;
            break;
          }
        }
      }
      frames.add(out);
    }
    return changed ? new StackTrace(frames) : stack;
  }

  /**
   * The figures of several parts as one: counts add up, the mean pause is weighted by pauses,
   * and the median and p99 are the largest part's (a bound: the parts' samples are not kept).
   */
  static RecordSession.Summary summary(List<RecordSession.Result> parts,
      Map<String, Long> losses) {
    long samples = 0;
    long periods = 0;
    int threads = 0;
    long pauses = 0;
    double pauseSum = 0;
    long median = 0;
    long p99 = 0;
    long max = 0;
    double hzThreads = 0;
    Map<String, Long> errors = new LinkedHashMap<>();
    for (RecordSession.Result r : parts) {
      RecordSession.Summary s = r.summary();
      samples += s.samples();
      periods += s.periods();
      threads += s.threads();
      pauses += s.pauseCount();
      pauseSum += (double) s.meanPauseNanos() * s.pauseCount();
      median = Math.max(median, s.medianPauseNanos());
      p99 = Math.max(p99, s.p99PauseNanos());
      max = Math.max(max, s.maxPauseNanos());
      hzThreads += s.achievedHz() * s.threads();
      s.errors().forEach((k, v) -> errors.merge(k, v, Long::sum));
    }
    return new RecordSession.Summary(samples, periods, threads, errors, losses, pauses,
        pauses == 0 ? 0 : (long) (pauseSum / pauses), median, p99, max,
        threads == 0 ? 0 : hzThreads / threads);
  }
}
