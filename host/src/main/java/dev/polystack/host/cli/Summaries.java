package dev.polystack.host.cli;

import dev.polystack.host.launch.ChildProcess;
import dev.polystack.host.ptrace.WaitStatus;
import dev.polystack.host.session.RecordSession;
import dev.polystack.otel.counters.CounterKind;
import dev.polystack.otel.counters.Counters;
import dev.polystack.otel.counters.SamplingRates;
import dev.polystack.otel.model.Recording;
import dev.polystack.otel.model.ValueType;
import java.nio.file.Path;
import java.util.Map;
import java.util.stream.Collectors;

/** The end-of-run summary: what was recorded, what it cost the target, what was lost. */
final class Summaries {
  private Summaries() {}

  static void print(Console console, RecordSession.Result result, Path output) {
    print(console, result, output, false, false);
  }

  /**
   * @param verbose also the exact loss and counter reasons (as {@code --stats-json} has them)
   * @param idle the run sampled sleeping threads too, so an empty profile has other causes
   */
  static void print(Console console, RecordSession.Result result, Path output, boolean verbose,
      boolean idle) {
    RecordSession.Summary s = result.summary();
    var err = console.err();
    SamplingRates rates = new SamplingRates(1e9 / result.recording().periodNanos(),
        SamplingRates.onCpuHz(s.losses()), s.achievedHz());
    if (result.recording().sampleTypes().isEmpty()) {
      err.printf("polystack: %s from %s; %s%n", plural(s.samples(), "sample"),
          plural(s.threads(), "thread"), rates.describe());
    } else {
      // A record of allocations or of calls: what the kernel sampled of what it counted.
      boolean calls = calls(result.recording());
      long period = result.recording().periodNanos();
      err.printf("polystack: %s sampled of %s (%s); %s%n",
          plural(s.losses().getOrDefault("capture_alloc_sampled", 0L),
              calls ? "call" : "allocation"),
          plural(s.losses().getOrDefault("capture_alloc_calls", 0L),
              calls ? "probed call" : "allocator call"),
          period == 1 ? "every call"
              : "one per " + period + (calls ? " calls" : " bytes") + " on average",
          plural(s.samples(), "stack"));
    }
    if (s.periods() > s.samples()) {
      long missed = s.periods() - s.samples();
      err.println("polystack: " + plural(missed, "tick") + (missed == 1 ? " was" : " were")
          + " not sampled; " + (missed == 1 ? "its" : "their") + " time counts in the same"
          + " thread's next sample" + (verbose ? " (" + s.periods() + " periods in the profile)"
          : ""));
    }
    if (!RecordSession.Mode.PTRACE.id().equals(result.recording().mode())) {
      err.println("polystack: target never stopped (" + result.recording().mode() + " mode)");
    } else {
      err.printf("polystack: target pause per sample: mean %d us, p99 %d us%n",
          s.meanPauseNanos() / 1000, s.p99PauseNanos() / 1000);
    }
    if (!s.errors().isEmpty()) {
      err.println("polystack: stacks ending in an error frame: " + join(s.errors()));
    }
    Map<String, Long> lost = LossGroups.samplesLost(s.losses());
    if (!lost.isEmpty()) {
      err.println("polystack: " + LossGroups.describe(lost)
          + (verbose ? "" : " (-v or --stats-json for the exact reasons)"));
    }
    if (verbose && !lost.isEmpty()) {
      err.println("polystack: not sampled or lost, by reason: " + join(lost));
    }
    Map<String, Long> notes = notes(s.losses());
    if (verbose && !notes.isEmpty()) {
      err.println("polystack: notes (not losses): " + join(notes));
    }
    Map<String, Long> capture = capture(s.losses());
    if (verbose && !capture.isEmpty()) {
      err.println("polystack: " + (result.recording().sampleTypes().isEmpty() ? "tick capture"
          : "allocation probes") + ": " + join(capture));
    }
    for (RecordSession.ProcessPart p : result.processes()) {
      long lostHere = LossGroups.total(p.losses());
      err.println("polystack: process " + p.pid() + " (" + p.name() + "): "
          + plural(p.samples(), "sample") + (lostHere > 0 ? ", " + lostHere + " lost" : "")
          + (p.exited() ? "; exited during the run" : ""));
    }
    err.println("polystack: " + describeExit(result));
    if (output != null) {
      err.println("polystack: wrote " + output);
    }
    err.flush();
    if (s.samples() == 0) {
      console.warn(whyEmpty(result, lost, idle));
    }
  }

  /** Why a run has no sample, from what the session knows; one line, with what to try. */
  static String whyEmpty(RecordSession.Result result, Map<String, Long> lost, boolean idle) {
    if (!lost.isEmpty()) {
      return "the profile is empty: every sample was lost (see the line above; -v for the exact"
          + " reasons)";
    }
    Recording recording = result.recording();
    long ranNanos = recording.endEpochNanos() - recording.startEpochNanos();
    if (calls(recording)) {
      return "the profile is empty: no call of the --site functions in " + ranNanos / 1_000_000
          + " ms" + (recording.periodNanos() == 1 ? ""
          : " was sampled (--stack-every 1 samples every call)");
    }
    if (!recording.sampleTypes().isEmpty()) {
      return "the profile is empty: no allocation was sampled in " + ranNanos / 1_000_000
          + " ms (the target called no probed allocator of the C library, or allocated less than"
          + " the sampling interval; --alloc-every-call samples every call)";
    }
    if ((result.targetExit() != null || result.targetGone()) && !result.killedAtEnd()) {
      // Whether it exited at once or slept until it exited, no thread was seen on a CPU.
      return "the profile is empty: the target ended after " + ranNanos / 1_000_000 + " ms"
          + " without a thread seen running: it exited at once, or its threads were off-CPU"
          + " (sleeping, waiting) until the end" + (idle ? "" : "; --mode ptrace --idle samples"
          + " sleeping threads too");
    }
    if (idle) {
      return "the profile is empty: no thread of the target could be sampled (check --tid)";
    }
    return "the profile is empty: the target's threads were off-CPU (sleeping or waiting) the"
        + " whole time and only running threads are sampled; to see where they wait, use"
        + " --mode ptrace --idle";
  }

  /** {@code 1 sample}, {@code 2 samples}. */
  static String plural(long n, String noun) {
    return n + " " + noun + (n == 1 ? "" : "s");
  }

  /**
   * The run's figures as one JSON object (for {@code record --stats-json}): sample and thread
   * counts, the sampling periods the samples stand for (see {@code Sample#periods}), achieved
   * rate per wall second and thread and per second of the target's CPU time (null if
   * unmeasured), target pause per sample in nanoseconds (count, mean, median, p99, max),
   * the error and loss counters by reason, the tick capture's figures (bpf mode: ticks the
   * kernel saw, records, plan stops and copies by outcome), the notes (how polystack and its
   * plug-ins read the target), and polystack's own CPU time and peak RSS. Which counter goes
   * where is its declaration's kind (docs/operations.md, "The record summary").
   */
  static String statsJson(RecordSession.Summary s) {
    return statsJson(s, java.util.List.of());
  }

  /** With a record of several processes, a {@code processes} array: each one's samples, losses. */
  static String statsJson(RecordSession.Summary s,
      java.util.List<RecordSession.ProcessPart> processes) {
    StringBuilder parts = new StringBuilder();
    for (RecordSession.ProcessPart p : processes) {
      parts.append(parts.length() == 0 ? "" : ", ").append("{\"pid\": ").append(p.pid())
          .append(", \"name\": ").append(Json.quote(p.name()))
          .append(", \"samples\": ").append(p.samples())
          .append(", \"exited\": ").append(p.exited())
          .append(", \"losses\": ").append(jsonCounts(losses(p.losses()))).append('}');
    }
    double onCpu = SamplingRates.onCpuHz(s.losses());
    return "{\"samples\": " + s.samples()
        + ", \"periods\": " + s.periods()
        + ", \"threads\": " + s.threads()
        + ", \"achieved_hz\": " + String.format(java.util.Locale.ROOT, "%.3f", s.achievedHz())
        + ", \"on_cpu_hz\": " + (Double.isNaN(onCpu) ? "null"
            : String.format(java.util.Locale.ROOT, "%.3f", onCpu))
        + ", \"pause_ns\": {\"count\": " + s.pauseCount()
        + ", \"mean\": " + s.meanPauseNanos()
        + ", \"median\": " + s.medianPauseNanos()
        + ", \"p99\": " + s.p99PauseNanos()
        + ", \"max\": " + s.maxPauseNanos() + "}"
        + ", \"errors\": " + jsonCounts(s.errors())
        + ", \"losses\": " + jsonCounts(losses(s.losses()))
        + ", \"capture\": " + jsonCounts(capture(s.losses()))
        + ", \"notes\": " + jsonCounts(notes(s.losses()))
        + (processes.isEmpty() ? "" : ", \"processes\": [" + parts + "]")
        + ", \"host\": {\"cpu_ns\": " + ownCpuNanos()
        + ", \"peak_rss_kib\": " + peakRssKib() + "}}\n";
  }

  /** The losses among a run's counters, by name (undeclared names included: never hidden). */
  static Map<String, Long> losses(Map<String, Long> counters) {
    return Counters.ofKind(counters, CounterKind.LOSS);
  }

  /** The tick capture's figures (bpf mode), named without their {@code capture_} prefix. */
  static Map<String, Long> capture(Map<String, Long> counters) {
    Map<String, Long> out = new java.util.TreeMap<>();
    Counters.ofKind(counters, CounterKind.CAPTURE_FIGURE).forEach((k, v) -> out.put(
        k.startsWith(Counters.CAPTURE_PREFIX) ? k.substring(Counters.CAPTURE_PREFIX.length()) : k,
        v));
    return out;
  }

  /** How polystack and its plug-ins read the target (notes of both kinds), by name. */
  static Map<String, Long> notes(Map<String, Long> counters) {
    Map<String, Long> out = new java.util.TreeMap<>();
    var byKind = Counters.byKind(counters);
    out.putAll(byKind.getOrDefault(CounterKind.NOTE, Map.of()));
    out.putAll(byKind.getOrDefault(CounterKind.PLUGIN_NOTE, Map.of()));
    return out;
  }

  /**
   * CPU time of polystack's own process so far, without a launched target's (which /usr/bin/time
   * would add, the target being our child); -1 if the JVM cannot tell.
   */
  static long ownCpuNanos() {
    var os = java.lang.management.ManagementFactory.getOperatingSystemMXBean();
    return os instanceof com.sun.management.OperatingSystemMXBean sun
        ? sun.getProcessCpuTime() : -1;
  }

  /** Peak resident set of polystack's own process (VmHWM), or -1 if unreadable. */
  static long peakRssKib() {
    try {
      for (String line : java.nio.file.Files.readAllLines(java.nio.file.Path.of("/proc/self/status"))) {
        if (line.startsWith("VmHWM:")) {
          return Long.parseLong(line.substring(6).replace("kB", "").trim());
        }
      }
    } catch (java.io.IOException | NumberFormatException e) {
      // fall through
    }
    return -1;
  }

  private static String jsonCounts(Map<String, Long> counts) {
    return new java.util.TreeMap<>(counts).entrySet().stream()
        .map(e -> Json.quote(e.getKey()) + ": " + e.getValue())
        .collect(Collectors.joining(", ", "{", "}"));
  }

  /** One line on what reached the OTLP receiver, one more per problem. */
  static void printExport(Console console, OtlpExport.Report report) {
    var err = console.err();
    var p = report.profiles();
    err.printf("polystack: OTLP: sent %d samples in %d request(s) to %s%n", p.samplesSent(),
        p.requests(), report.target());
    if (report.ok()) {
      // A partial success with a warning only: worth reading, not a failure.
      p.messages().forEach(m -> err.println("polystack: OTLP: " + m));
    }
    err.flush();
  }

  static String exportProblem(OtlpExport.Report report) {
    var p = report.profiles();
    StringBuilder b = new StringBuilder();
    if (p.samplesDropped() > 0 || p.requestsFailed() > 0) {
      b.append(p.samplesDropped()).append(" samples dropped, ").append(p.requestsFailed())
          .append(" request(s) failed");
    }
    if (p.rejected() > 0) {
      b.append(b.length() == 0 ? "" : ", ").append(p.rejected()).append(" profile(s) rejected");
    }
    if (!p.messages().isEmpty()) {
      b.append(b.length() == 0 ? "" : ": ").append(String.join("; ", p.messages()));
    }
    if (!report.metricsFailure().isEmpty()) {
      b.append(b.length() == 0 ? "" : "; ").append(report.metricsFailure());
    }
    return b.toString();
  }

  static String describeExit(RecordSession.Result result) {
    WaitStatus exit = result.targetExit();
    if (result.killedAtEnd()) {
      return launchedTargetKilled(result.stoppedByUser());
    }
    if (exit == null && result.targetGone()) {
      return "target exited (its exit status went to its parent)";
    }
    if (exit == null && !RecordSession.Mode.PTRACE.id().equals(result.recording().mode())) {
      return (result.stoppedByUser() ? "stopped" : "done") + "; target still running";
    }
    if (exit == null) {
      return result.stoppedByUser() ? "stopped; target detached and still running"
          : "done; target detached and still running";
    }
    if (exit.exited()) {
      return "target exited with code " + exit.exitCode();
    }
    return "target was killed by signal " + exit.termSignal() + " (" + signalName(exit.termSignal())
        + ")" + (exit.coreDumped() ? ", core dumped" : "");
  }

  /** What a launched target that outlived its session got: the same words for every command. */
  static String launchedTargetKilled(boolean stoppedByUser) {
    return (stoppedByUser ? "stopped" : "done") + "; the launched target was still running and"
        + " polystack ended it (SIGTERM, then SIGKILL " + ChildProcess.STOP_GRACE.toSeconds()
        + " s later if still running): a program started by polystack does not outlive the"
        + " session (attach with --pid to leave a process running)";
  }

  static String signalName(int signal) {
    String[] names = {"0", "SIGHUP", "SIGINT", "SIGQUIT", "SIGILL", "SIGTRAP", "SIGABRT",
        "SIGBUS", "SIGFPE", "SIGKILL", "SIGUSR1", "SIGSEGV", "SIGUSR2", "SIGPIPE", "SIGALRM",
        "SIGTERM"};
    return signal > 0 && signal < names.length ? names[signal] : "signal " + signal;
  }

  private static String join(Map<String, Long> counts) {
    return counts.entrySet().stream().map(e -> e.getKey() + " " + e.getValue())
        .collect(Collectors.joining(", "));
  }

  /** A record of --event calls: its one value is calls. */
  private static boolean calls(Recording recording) {
    return !recording.sampleTypes().isEmpty() && recording.periodType().equals(ValueType.CALLS);
  }
}
