package dev.polystack.host.cli;

import com.google.inject.Inject;
import dev.polystack.host.bpf.AllocationProbes;
import dev.polystack.host.launch.Credentials;
import dev.polystack.host.monitor.SiteSpec;
import dev.polystack.host.output.OutputException;
import dev.polystack.host.output.OutputFile;
import dev.polystack.host.output.Outputs;
import dev.polystack.host.plugins.LoadedPlugin;
import dev.polystack.host.plugins.PluginGuard;
import dev.polystack.host.plugins.PluginLoader;
import dev.polystack.host.proc.ProcFs;
import dev.polystack.host.ptrace.WaitStatus;
import dev.polystack.host.sampling.SamplingException;
import dev.polystack.host.sampling.SamplingOptions;
import dev.polystack.host.session.AllocRecordSession;
import dev.polystack.host.session.IntervalListener;
import dev.polystack.host.session.MultiRecord;
import dev.polystack.host.session.RecordSession;
import dev.polystack.otel.local.ProfileFormat;
import dev.polystack.otel.local.ProfileWriter;
import dev.polystack.otel.model.ValueType;
import dev.polystack.otel.otlp.OtlpConfig;
import java.io.BufferedOutputStream;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.FilterOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParentCommand;

/** {@code polystack record}: sample a process and write a profile. */
@Command(
    name = "record",
    mixinStandardHelpOptions = true,
    description = "Sample running processes (--pid, --comm, --match) or a command (after --) and"
        + " write a profile.")
final class RecordCommand implements Callable<Integer> {

  @Mixin TargetOptions target = new TargetOptions();

  @Mixin TargetSelection select = new TargetSelection();

  @Option(names = "--per-thread",
      description = "Folded output: start each stack with its thread, 'name (tid N)', as the"
          + " root frame (as py-spy's --threads does). The html flame graph and speedscope"
          + " always show threads apart, pprof as thread.name/thread.id labels.")
  boolean perThread;

  @Option(names = {"--format", "-f"}, paramLabel = "FORMAT",
      description = "html, pprof, folded, speedscope or otlp (a binary OTLP"
          + " ExportProfilesServiceRequest). Default: from the --output name (.html; .folded,"
          + " .collapsed, .txt; .pb.gz, .pprof, .prof, .pb; .speedscope.json, .json;"
          + " .otlp.pb; any other ending is refused), html without --output or for -o -;"
          + " when streaming to an OTLP endpoint, no local file unless --format or --output is"
          + " given.")
  String format;

  @Mixin OtlpOptions otlp = new OtlpOptions();

  @Option(names = {"--output", "-o"}, paramLabel = "FILE",
      description = "Where to write (default: NAME-PID-TIME.EXT in the current directory; -"
          + " for stdout). An existing file is replaced; a symbolic link is refused. Mode 0600"
          + " (under sudo: owned by the invoking user).")
  Path output;

  @Option(names = "--max-depth", paramLabel = "N", defaultValue = "512",
      description = "Frames per stack (default: ${DEFAULT-VALUE}).")
  int maxDepth;

  @Option(names = "--stats-json", paramLabel = "FILE",
      description = "Write run statistics as JSON to FILE (samples, the periods they stand for,"
          + " target pause per sample: mean, median, p99, max; losses).")
  Path statsJson;

  @Option(names = "--event", paramLabel = "EVENT", defaultValue = "cpu",
      description = "cpu (default: where time goes), alloc (who allocates: the allocator"
          + " malloc is bound to, and a runtime's own, probed with uprobe sessions; one --pid or"
          + " a command; docs/allocations.md) or calls (who calls the functions of --site:"
          + " their callers' stacks, sampled at the calls; docs/probes.md).")
  String event;

  @Option(names = "--site", paramLabel = "SITE",
      description = "--event calls: a function whose calls are sampled, MODULE:SYMBOL[+OFF] as"
          + " polystack probe names it (e.g. libc.so.6:write); repeatable, up to "
          + AllocationProbes.MAX_SITES + ".")
  List<String> sites = new ArrayList<>();

  @Option(names = "--stack-every", paramLabel = "N", defaultValue = "1",
      description = "--event calls: one stack per N calls on average (random gaps, so"
          + " periodic callers are not aliased); 1 (default): every call, exact counts.")
  long stackEvery;

  /** The parsed --site values, once checkEvent ran. */
  private final List<SiteSpec> callSites = new ArrayList<>();

  @Option(names = "--alloc-rate", paramLabel = "BYTES", defaultValue = "524288",
      description = "--event alloc: one sample per BYTES allocated on average (default:"
          + " ${DEFAULT-VALUE}, 512 KiB).")
  long allocRate;

  @Option(names = "--alloc-every-call",
      description = "--event alloc: sample every call (exact counts; each call then copies its"
          + " stack: for small runs).")
  boolean allocEveryCall;

  @Option(names = "--sample-type", paramLabel = "TYPE",
      description = "--event alloc: the value folded and html show and pprof's default:"
          + " alloc_space (default), alloc_objects, inuse_space or inuse_objects.")
  String sampleType;

  @Option(names = {"--verbose", "-v"},
      description = "Also print the exact reasons of losses and the kernel's tick capture"
          + " figures (as --stats-json has them).")
  boolean verbose;

  @ParentCommand PolystackCommand parent;

  private final PluginLoader loader;
  private final PluginGuard guard;
  private final Console console;
  private final Outputs outputs;

  @Inject
  RecordCommand(PluginLoader loader, PluginGuard guard, Console console, Outputs outputs) {
    this.loader = loader;
    this.guard = guard;
    this.console = console;
    this.outputs = outputs;
  }

  /**
   * 0, or a launched command's own failure passed on as time(1) and perf do: its exit code,
   * or 128 + the signal that killed it (not one polystack sent at the end of the run).
   */
  @Override
  public Integer call() {
    ProfileFormat profileFormat = resolveFormat(format, output);
    SamplingOptions options = target.options(maxDepth);
    OtlpConfig otlpConfig = otlpConfig(System.getenv());
    boolean local = otlpConfig == null || format != null || output != null;
    boolean toStdout = STDOUT.equals(output);
    boolean alloc = checkEvent();
    RecordSession.Backend backend = alloc ? null : target.selectingWith(select).check();
    if (otlpConfig != null && target.several()) {
      throw new UsageException("streaming to an OTLP endpoint records one process: give a single"
          + " --pid, or write a local file (--output) for several");
    }
    Credentials as = target.launchCredentials(console);
    OtlpOptions.warnIfInClear(otlpConfig, console::warn);
    // The files are created (under hidden names) before anything is attached or launched: a
    // place that cannot be written fails now, in one line, instead of after the recording.
    OutputFile profileFile = null;
    OutputFile statsFile = null;
    try {
      if (local && !toStdout) {
        profileFile = output != null ? outputs.replaceAtEnd(output, "--output")
            : outputs.replaceAtEndIn(Path.of(""), "--output");
      }
      if (statsJson != null) {
        statsFile = outputs.replaceAtEnd(statsJson, "--stats-json");
      }
      if (alloc) {
        RecordSession.Result result = recordAllocations(otlpConfig, options, profileFormat,
            local && toStdout, profileFile, statsFile, as);
        return target.command.isEmpty() ? ExitCodes.OK : launchedExitCode(result);
      }
      target.resolve(console);
      RecordSession.Result result = record(otlpConfig, backend, options, profileFormat,
          local && toStdout, profileFile, statsFile, as);
      return target.command.isEmpty() ? ExitCodes.OK : launchedExitCode(result);
    } catch (OutputException e) {
      throw OutputErrors.toCli(e);
    } finally {
      // Removes what was not committed: a failed run leaves no file behind.
      if (profileFile != null) {
        profileFile.close();
      }
      if (statsFile != null) {
        statsFile.close();
      }
    }
  }

  /**
   * Whether this is an allocation record, after checking that the options fit the event: one
   * --pid, bpf (the allocation program is a BPF program), a known sample type.
   */
  private boolean checkEvent() {
    if (!event.equals("calls") && (!sites.isEmpty() || stackEvery != 1)) {
      throw new UsageException((sites.isEmpty() ? "--stack-every" : "--site")
          + " is for --event calls");
    }
    if (event.equals("cpu")) {
      if (sampleType != null || allocEveryCall) {
        throw new UsageException((sampleType != null ? "--sample-type" : "--alloc-every-call")
            + " is for --event alloc");
      }
      return false;
    }
    if (!event.equals("alloc") && !event.equals("calls")) {
      throw new UsageException("--event must be cpu, alloc or calls, not " + event);
    }
    if (event.equals("calls")) {
      checkCalls();
    }
    boolean oneProcess = target.pids.size() == 1 && target.command.isEmpty();
    boolean command = target.pids.isEmpty() && !target.command.isEmpty();
    if ((!oneProcess && !command) || target.several()) {
      throw new UsageException("--event " + event + " records one process: give one --pid, or"
          + " a command after --");
    }
    if (command) {
      checkRunnable(target.command.get(0), System.getenv("PATH"));
    }
    if (target.mode != null && !target.mode.equals("bpf")) {
      throw new UsageException("--event " + event + " needs --mode bpf (its functions are"
          + " probed with BPF uprobes), not " + target.mode);
    }
    if (allocRate <= 0) {
      throw new UsageException("--alloc-rate must be > 0 bytes: " + allocRate);
    }
    if (sampleType != null && event.equals("alloc") && ValueType.ALLOCATIONS.stream()
        .noneMatch(t -> t.type().equals(sampleType))) {
      throw new UsageException("--sample-type must be alloc_space, alloc_objects, inuse_space"
          + " or inuse_objects, not " + sampleType);
    }
    return true;
  }

  /** --event calls: its sites parse as entry sites of a module, within the bound. */
  private void checkCalls() {
    if (sampleType != null || allocEveryCall) {
      throw new UsageException((sampleType != null ? "--sample-type" : "--alloc-every-call")
          + " is for --event alloc");
    }
    if (sites.isEmpty()) {
      throw new UsageException("--event calls needs a function to sample: --site"
          + " MODULE:SYMBOL, e.g. --site libc.so.6:write");
    }
    if (sites.size() > AllocationProbes.MAX_SITES) {
      throw new UsageException(sites.size() + " --site given: at most "
          + AllocationProbes.MAX_SITES + " per run");
    }
    if (stackEvery < 1) {
      throw new UsageException("--stack-every must be >= 1 call: " + stackEvery);
    }
    for (String s : sites) {
      SiteSpec spec;
      try {
        spec = SiteSpec.parse(s);
      } catch (IllegalArgumentException e) {
        throw new UsageException("--site " + e.getMessage());
      }
      if (spec.atReturn() || spec.isAddress() || spec.isVdso()) {
        throw new UsageException("--site " + s + ": --event calls takes a function's stack at"
            + " its entry with a uprobe: MODULE:SYMBOL[+OFF], no %return, [vdso] or address");
      }
      callSites.add(spec);
    }
  }

  /**
   * An allocation record: its values are totals over the run (inuse ones as of its end), so an
   * OTLP endpoint gets them once, at the end, one profile per sample type.
   */
  private RecordSession.Result recordAllocations(OtlpConfig otlpConfig, SamplingOptions options,
      ProfileFormat profileFormat, boolean toStdout, OutputFile profileFile,
      OutputFile statsFile, Credentials as) {
    var registry = PolystackCommand.loadPlugins(loader, parent.pluginPath, console);
    boolean calls = event.equals("calls");
    AllocRecordSession session = calls
        ? AllocRecordSession.ofCalls(ProcFs.system(), registry, guard, console::warn, callSites)
        : new AllocRecordSession(ProcFs.system(), registry, guard, console::warn);
    StatusLine status = new StatusLine(console);
    RecordSession.Result result;
    try (StopSignals signals = new StopSignals(console)) {
      long mean = calls ? (stackEvery == 1 ? 0 : stackEvery) : allocEveryCall ? 0 : allocRate;
      AllocRecordSession.AllocOptions alloc = new AllocRecordSession.AllocOptions(mean,
          AllocRecordSession.DEFAULT_STACK_BYTES);
      result = target.command.isEmpty()
          ? session.attach(target.pids.get(0), options, alloc, signals::stopRequested,
              status::update)
          : session.launch(target.command, as, options, alloc, signals::stopRequested,
              status::update);
    } catch (AllocRecordSession.UnprobeableTarget e) {
      throw new UsageException(e.getMessage());
    } catch (SamplingException e) {
      throw new CommandFailedException(e.getMessage());
    } finally {
      status.clear();
    }
    if (sampleType != null) {
      RecordSession.Result r = result;
      result = new RecordSession.Result(r.recording().withDefaultType(sampleType), r.summary(),
          r.targetExit(), r.stoppedByUser(), r.targetGone());
    }
    OtlpExport export = otlpConfig == null ? null : new OtlpExport(otlpConfig, otlp.interval);
    if (export != null) {
      RecordSession.Summary s = result.summary();
      export.interval(result.recording(),
          new IntervalListener.Totals(s.samples(), s.losses(), s.errors()), true);
    }
    finish(result, profileFormat, toStdout, profileFile, statsFile, export, false, () -> { });
    return result;
  }

  /**
   * The end of a record: the local file first (a failing receiver must not cost the user the
   * profile), the export's last requests, --stats-json, the summary and {@code afterSummary};
   * then a failure of the file or the export, in one line.
   */
  private void finish(RecordSession.Result result, ProfileFormat profileFormat,
      boolean toStdout, OutputFile profileFile, OutputFile statsFile, OtlpExport export,
      boolean idle, Runnable afterSummary) {
    Path out = null;
    CommandFailedException writeFailure = null;
    try {
      if (profileFile != null) {
        String name = output != null ? null : defaultName(
            result.recording().target().executableName(), result.recording().target().pid(),
            profileFormat);
        out = write(result, profileFormat.writer(perThread), profileFile, name);
      } else if (toStdout) {
        writeToStdout(result, profileFormat.writer(perThread));
      }
    } catch (CommandFailedException e) {
      writeFailure = e;
    }
    OtlpExport.Report report = export == null ? null : export.finish(FINISH_TIMEOUT);
    if (statsFile != null) {
      writeStats(result, statsFile);
    }
    Summaries.print(console, result, out, verbose, idle);
    afterSummary.run();
    if (writeFailure != null) {
      throw writeFailure;
    }
    checkExport(report);
  }

  /** Prints how the OTLP export went; fails the command, in one line, if it did not. */
  private void checkExport(OtlpExport.Report report) {
    if (report == null) {
      return;
    }
    Summaries.printExport(console, report);
    if (!report.ok()) {
      String problem = Summaries.exportProblem(report);
      throw new CommandFailedException("OTLP export to " + report.target() + " failed: "
          + problem + OtlpOptions.advice(problem, report.profiles().requestsFailed() == 0 ? ""
          : "; check that the receiver runs and accepts profiles (Collector:"
          + " --feature-gates=service.profilesSupport and a profiles pipeline)"));
    }
  }

  /** What a launched command's ending makes polystack's exit code (see {@link #call}). */
  static int launchedExitCode(RecordSession.Result result) {
    WaitStatus exit = result.targetExit();
    if (exit == null || result.killedAtEnd()) {
      return ExitCodes.OK;
    }
    return exit.exited() ? exit.exitCode() : 128 + exit.termSignal();
  }

  private RecordSession.Result record(OtlpConfig otlpConfig, RecordSession.Backend backend,
      SamplingOptions options, ProfileFormat profileFormat, boolean toStdout,
      OutputFile profileFile, OutputFile statsFile, Credentials as) {
    var registry = PolystackCommand.loadPlugins(loader, parent.pluginPath, console);
    RecordSession session = new RecordSession(ProcFs.system(), registry, guard, console::warn)
        .launchAs(as);
    OtlpExport export = otlpConfig == null ? null : new OtlpExport(otlpConfig, otlp.interval);
    if (export != null) {
      // Samples are kept for the end only when a local file wants them all.
      session.stream(otlp.interval, export, profileFile != null || toStdout);
    }
    StatusLine status = new StatusLine(console);
    RecordSession.Result result;
    try (StopSignals signals = new StopSignals(console)) {
      result = target.sample(session,
          new MultiRecord(ProcFs.system(), registry, guard, console::warn, as), backend,
          options, signals::stopRequested, status::update);
    } catch (SamplingException e) {
      if (export != null) {
        export.finish(FINISH_TIMEOUT);
      }
      throw new CommandFailedException(e.getMessage());
    } finally {
      status.clear();
    }
    finish(result, profileFormat, toStdout, profileFile, statsFile, export, target.idle,
        () -> UnknownRuntimes.describe(result.recording(), registry.plugins().stream()
            .map(LoadedPlugin::id).toList()).ifPresent(console::warn));
    return result;
  }

  /** How long the end of a run waits for the last exports. */
  static final Duration FINISH_TIMEOUT = Duration.ofSeconds(15);

  /** The OTLP configuration when streaming is on (a flag or the endpoint variable), else null. */
  OtlpConfig otlpConfig(Map<String, String> env) {
    return otlp.config(env);
  }

  /**
   * Fails early, in one line, for a command that cannot be executed. Otherwise the launcher's
   * shell would print its own "not found" line, exit 126 or 127 before the program ever ran, and
   * the failure would surface as a confusing ptrace error. Looks the name up as the shell does:
   * as a path if it contains a slash, else in each PATH directory.
   */
  static void checkRunnable(String program, String path) {
    if (program.contains("/")) {
      Path p = Path.of(program);
      if (!Files.exists(p)) {
        throw new CommandFailedException("cannot run " + program + ": no such file");
      }
      if (!Files.isRegularFile(p) || !Files.isExecutable(p)) {
        throw new CommandFailedException("cannot run " + program + ": not an executable file");
      }
      return;
    }
    String dirs = path == null ? "/usr/local/bin:/usr/bin:/bin" : path;
    for (String dir : dirs.split(":", -1)) {
      Path p = Path.of(dir.isEmpty() ? "." : dir).resolve(program);
      if (!program.isEmpty() && Files.isRegularFile(p) && Files.isExecutable(p)) {
        return;
      }
    }
    throw new CommandFailedException("cannot run '" + program + "': command not found in PATH");
  }

  /**
   * The format named by --format, else by the --output name's ending, else html. A --format
   * that contradicts the ending, another tool's ending (.jfr, .svg) and, without --format, an
   * ending that names no format are usage errors: a file named cpu.xyz holding HTML would
   * mislead every tool that opens it. {@code -o -} (stdout) has no ending: --format or html.
   */
  static ProfileFormat resolveFormat(String format, Path output) {
    ProfileFormat named = null;
    if (format != null) {
      try {
        named = ProfileFormat.parse(format);
      } catch (IllegalArgumentException e) {
        throw new UsageException("--format: " + e.getMessage());
      }
    }
    boolean hasName = output != null && !STDOUT.equals(output)
        && output.getFileName() != null;
    Optional<ProfileFormat> byName;
    try {
      byName = hasName ? ProfileFormat.forFileName(output.getFileName().toString())
          : Optional.empty();
    } catch (IllegalArgumentException e) {
      throw new UsageException("--output " + output + ": " + e.getMessage());
    }
    if (named == null) {
      if (hasName && byName.isEmpty()) {
        throw new UsageException("--output " + output + ": the name's ending says no format"
            + " polystack writes; end it with one of " + ProfileFormat.knownEndings()
            + ", or give --format");
      }
      return byName.orElse(ProfileFormat.HTML);
    }
    if (byName.isPresent() && byName.get() != named) {
      throw new UsageException("--format " + format + " contradicts --output " + output
          + ", whose name says " + byName.get().cliName() + "; drop --format or end the name"
          + " with " + named.endings());
    }
    return named;
  }

  /** The --output name that means stdout, as perf, py-spy and most Unix tools take it. */
  static final Path STDOUT = Path.of("-");

  /**
   * Writes the profile to this process's stdout as bytes (pprof is binary): the console's
   * writers carry text only. Not closed: stdout belongs to the process.
   */
  private static void writeToStdout(RecordSession.Result result, ProfileWriter writer) {
    OutputStream stdout = new FileOutputStream(FileDescriptor.out);
    try {
      OutputStream unclosed = new BufferedOutputStream(new FilterOutputStream(stdout) {
        @Override
        public void write(byte[] b, int off, int len) throws IOException {
          out.write(b, off, len);
        }

        @Override
        public void close() throws IOException {
          flush();
        }
      });
      writer.write(result.recording(), unclosed);
      unclosed.flush();
    } catch (IOException e) {
      throw new CommandFailedException("cannot write the profile to stdout: "
          + OutputFile.reason(e) + "; give --output FILE");
    }
  }

  static String defaultName(String executable, int pid, ProfileFormat format) {
    String time = LocalDateTime.now().format(DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss"));
    String safe = executable.replaceAll("[^A-Za-z0-9._-]", "_");
    return safe + "-" + pid + "-" + time + "." + format.extension();
  }

  private static void writeStats(RecordSession.Result result, OutputFile file) {
    try {
      file.stream().write(Summaries.statsJson(result.summary(), result.processes())
          .getBytes(StandardCharsets.UTF_8));
      file.commit();
    } catch (IOException e) {
      throw new CommandFailedException("cannot write " + file.path() + ": "
          + OutputFile.reason(e) + "; choose another --stats-json");
    } catch (OutputException e) {
      throw OutputErrors.toCli(e);
    }
  }

  /** Writes the profile and puts it in place: under {@code name}, or the --output name. */
  private static Path write(RecordSession.Result result, ProfileWriter writer, OutputFile file,
      String name) {
    try {
      writer.write(result.recording(), file.stream());
      return name == null ? file.commit() : file.commit(name);
    } catch (IOException e) {
      throw new CommandFailedException("cannot write " + (name == null ? file.path() : name)
          + ": " + OutputFile.reason(e) + "; choose another --output");
    } catch (OutputException e) {
      throw OutputErrors.toCli(e);
    }
  }
}
