package dev.polystack.host.cli;

import com.google.inject.Inject;
import dev.polystack.host.launch.Accounts;
import dev.polystack.host.launch.Credentials;
import dev.polystack.host.output.OutputException;
import dev.polystack.host.output.OutputFile;
import dev.polystack.host.output.Outputs;
import dev.polystack.host.plugins.PluginGuard;
import dev.polystack.host.plugins.PluginLoader;
import dev.polystack.host.plugins.PluginRegistry;
import dev.polystack.host.probes.ProbeException;
import dev.polystack.host.probes.TraceSession;
import dev.polystack.host.proc.ProcFs;
import dev.polystack.host.sampling.SamplingException;
import dev.polystack.host.sampling.SamplingOptions;
import dev.polystack.host.session.RecordSession;
import dev.polystack.otel.local.ProfileFormat;
import dev.polystack.plugin.api.ProbePlugin;
import java.io.BufferedWriter;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParentCommand;

/**
 * {@code polystack demo}: the quick start. Installs what it needs where it may
 * ({@link DemoSetup}), runs a bundled LuaJIT program with the system {@code luajit}, samples it
 * as {@code record} does by default (bpf mode, perf where BPF cannot load) and, on the same
 * process at the same time, traces its vDSO calls with the perf backend, then writes a flame
 * graph, a pprof file and the calls as JSON lines into one folder. Everything the two real
 * commands do, with no choices to make. The program itself is written into a fresh private
 * directory (0700, random name) and removed at the end: a predictable path would let another
 * user swap the code root runs.
 */
@Command(
    name = "demo",
    mixinStandardHelpOptions = true,
    description = "Profile a bundled LuaJIT example and trace its vDSO calls: writes an html"
        + " flame graph, a pprof file and vDSO JSON lines into --output-dir. Needs luajit (and"
        + " libbpf1 for bpf mode): as root on Debian or Ubuntu it installs them with apt-get.")
final class DemoCommand implements Runnable {
  static final String SCRIPT = "demo.lua";
  static final String FLAME_GRAPH = "profile.html";
  static final String PPROF = "profile.pb.gz";
  static final String CALLS = "vdso-calls.jsonl";

  /** The vDSO functions the demo program calls: os.clock and os.time reach these. */
  private static final List<String> TRACED = List.of("clock_gettime", "time");

  @Option(names = "--output-dir", paramLabel = "DIR", defaultValue = "polystack-demo",
      description = "Folder for the results, created 0700 if missing (default:"
          + " ./${DEFAULT-VALUE}); it must be yours (under sudo: the invoking user's).")
  Path outputDir;

  @Option(names = {"--duration", "-d"}, paramLabel = "D", converter = Durations.class,
      description = "CPU time the example program runs, in whole seconds (e.g. 10s, 1m;"
          + " default: 3s).")
  java.time.Duration duration = java.time.Duration.ofSeconds(3);

  /** The option's old name, kept so scripts that use it still work. */
  @Option(names = "--seconds", paramLabel = "N", hidden = true)
  void seconds(int n) {
    duration = java.time.Duration.ofSeconds(n);
  }

  @Mixin LaunchOptions launchAs = new LaunchOptions();

  @ParentCommand PolystackCommand parent;

  private final PluginLoader loader;
  private final PluginGuard guard;
  private final Console console;
  private final Outputs outputs;

  @Inject
  DemoCommand(PluginLoader loader, PluginGuard guard, Console console, Outputs outputs) {
    this.loader = loader;
    this.guard = guard;
    this.console = console;
    this.outputs = outputs;
  }

  @Override
  public void run() {
    if (duration.toMillis() % 1000 != 0 || duration.getSeconds() < 1
        || duration.getSeconds() > 600) {
      throw new UsageException("--duration " + duration.toMillis() + "ms"
          + ": give whole seconds, 1s to 600s (10m)");
    }
    String path = System.getenv("PATH");
    DemoSetup.apply(DemoSetup.plan(DemoSetup.probe(path)), console, path);
    Credentials as = launchAs.resolve(System.getenv(), Accounts.effectiveUid(), console::note);
    Path scriptDir = null;
    OutputFile html = null;
    OutputFile pprof = null;
    OutputFile calls = null;
    try {
      Path dir = outputs.directory(outputDir, "--output-dir");
      // All three are created before the program starts: an unwritable folder fails first.
      html = outputs.replaceAtEnd(dir.resolve(FLAME_GRAPH), "--output-dir");
      pprof = outputs.replaceAtEnd(dir.resolve(PPROF), "--output-dir");
      calls = outputs.writeNow(dir.resolve(CALLS), "--output-dir", false);
      scriptDir = outputs.privateTemporaryDirectory("polystack-demo-");
      Path script = scriptDir.resolve(SCRIPT);
      copyScript(script);
      demo(script, html, pprof, calls, as);
    } catch (OutputException e) {
      throw OutputErrors.toCli(e);
    } finally {
      for (OutputFile f : new OutputFile[] {html, pprof, calls}) {
        if (f != null) {
          f.close();
        }
      }
      if (scriptDir != null) {
        removeQuietly(scriptDir.resolve(SCRIPT));
        removeQuietly(scriptDir);
      }
    }
  }

  private void demo(Path script, OutputFile htmlFile, OutputFile pprofFile, OutputFile callsFile,
      Credentials as) throws OutputException {
    PluginRegistry registry = PolystackCommand.loadPlugins(loader, parent.pluginPath, console);
    ProbePlugin vdso = registry.probePlugins().stream()
        .filter(p -> p.id().equals("vdso"))
        .map(p -> (ProbePlugin) p.plugin())
        .findFirst()
        .orElseThrow(() -> new CommandFailedException("the vdso plug-in is not loaded; check"
            + " 'polystack plugins' and --plugin-path"));

    Path calls = callsFile.path();
    VdsoThread tracer = new VdsoThread(vdso, callsFile);
    RecordSession session = new RecordSession(ProcFs.system(), registry, guard, console::warn)
        .launchAs(as);
    SamplingOptions options = new SamplingOptions(99, 0, false, Set.of(), 512,
        SamplingOptions.DEFAULT_STACK_BYTES);
    String seconds = Long.toString(duration.getSeconds());
    console.err().println("polystack: running 'luajit " + script + " " + seconds + "' with"
        + " sampling (record's default, bpf mode) and vDSO tracing (perf backend) ...");
    console.err().flush();
    RecordSession.Result result;
    StatusLine status = new StatusLine(console);
    try (StopSignals signals = new StopSignals(console)) {
      result = session.launch(List.of("luajit", script.toString(), seconds),
          RecordSession.Backend.defaultBackend(), options, signals::stopRequested,
          status::update, tracer::start);
    } catch (SamplingException e) {
      tracer.stopAndJoin();
      throw new CommandFailedException(e.getMessage());
    } finally {
      status.clear();
    }
    // The target is gone (or detached) now; the tracer sees that and ends on its own.
    tracer.stopAndJoin();

    Path html = write(result, ProfileFormat.HTML, htmlFile);
    Path pprof = write(result, ProfileFormat.PPROF, pprofFile);
    Summaries.print(console, result, null);
    if (tracer.failure.get() != null) {
      throw new CommandFailedException("vDSO tracing failed: " + tracer.failure.get()
          + "; the profile was written to " + html + " and " + pprof);
    }
    var out = console.out();
    out.println("flame graph:  " + html + "   (open it in a browser)");
    out.println("pprof:        " + pprof + "   (go tool pprof -top " + pprof + ")");
    out.println("vDSO calls:   " + calls + "   (" + tracer.summary() + ")");
    out.flush();
  }

  private static void copyScript(Path target) {
    try (InputStream in = DemoCommand.class.getResourceAsStream(SCRIPT)) {
      if (in == null) {
        throw new CommandFailedException("the distribution lacks " + SCRIPT + ": rebuild it"
            + " (mvn -B -DskipTests package)");
      }
      // A fresh file (O_EXCL) in the private directory: nothing else can be at that name.
      Files.write(target, in.readAllBytes(), StandardOpenOption.CREATE_NEW,
          StandardOpenOption.WRITE, LinkOption.NOFOLLOW_LINKS);
    } catch (IOException e) {
      throw new CommandFailedException("cannot write " + target + ": " + OutputFile.reason(e)
          + "; set TMPDIR to a writable directory");
    }
  }

  private static Path write(RecordSession.Result result, ProfileFormat format, OutputFile file)
      throws OutputException {
    try {
      format.writer().write(result.recording(), file.stream());
    } catch (IOException e) {
      throw new CommandFailedException("cannot write " + file.path() + ": "
          + OutputFile.reason(e) + "; choose another --output-dir");
    }
    return file.commit();
  }

  private static void removeQuietly(Path path) {
    try {
      Files.deleteIfExists(path);
    } catch (IOException ignored) {
      // A leftover in the private temporary directory harms nobody; tmp cleaning removes it.
    }
  }

  /**
   * The vDSO session, on its own platform thread: it starts when the program stands in its exec
   * (its memory map is final then) and ends by itself when the program exits. The perf backend
   * never stops or traces the target, so it coexists with the sampler in any mode.
   */
  private final class VdsoThread {
    private final ProbePlugin plugin;
    private final OutputFile output;
    private final AtomicBoolean stop = new AtomicBoolean();
    private final AtomicReference<String> failure = new AtomicReference<>();
    private final AtomicReference<TraceSession.Result> result = new AtomicReference<>();
    private Thread thread;

    VdsoThread(ProbePlugin plugin, OutputFile output) {
      this.plugin = plugin;
      this.output = output;
    }

    void start(int pid) {
      thread = new Thread(() -> trace(pid), "polystack-demo-vdso");
      thread.setDaemon(true);
      thread.start();
    }

    private void trace(int pid) {
      TraceSession.Options options = new TraceSession.Options(TRACED, false, Set.of(), false,
          0, 0, false, 0);
      try (Writer out = new BufferedWriter(new OutputStreamWriter(output.stream(),
          StandardCharsets.UTF_8))) {
        CallFormat format = new CallFormat(out, true, false, "demo-" + pid, console::warn, true);
        TraceSession.Result r = new TraceSession(ProcFs.system(), plugin, options, format)
            .attach(pid, stop::get);
        format.summary(r, Map.of("backend", "perf"));
        result.set(r);
        if (r.outputFailure() != null) {
          failure.set("cannot write " + output.path() + ": " + r.outputFailure().getMessage());
        }
      } catch (ProbeException e) {
        failure.set(e.getMessage());
      } catch (IOException e) {
        failure.set("cannot write " + output.path() + ": " + OutputFile.reason(e));
      } catch (RuntimeException e) {
        failure.set(e.toString());
      }
    }

    /** Ends the session if it still runs and waits for its file to be complete. */
    void stopAndJoin() {
      if (thread == null) {
        if (failure.get() == null) {
          failure.set("the program did not start");
        }
        return;
      }
      try {
        // Normally it has already seen the target exit; the flag only ends a stuck session.
        thread.join(10_000);
        if (thread.isAlive()) {
          stop.set(true);
          thread.join(10_000);
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      if (thread.isAlive()) {
        failure.compareAndSet(null, "the vDSO session did not end within 20 s");
      }
    }

    String summary() {
      TraceSession.Result r = result.get();
      return r == null ? "no session" : r.stats().session().calls() + " calls";
    }
  }
}
