package dev.polystack.host.monitor;

import dev.polystack.host.bpf.BpfException;
import dev.polystack.host.bpf.BpfLoadException;
import dev.polystack.host.bpf.BpfSupport;
import dev.polystack.host.bpf.ProbeMonitor;
import dev.polystack.host.launch.ChildProcess;
import dev.polystack.host.launch.Credentials;
import dev.polystack.host.launch.Launcher;
import dev.polystack.host.perf.PerfEventAttr;
import dev.polystack.host.proc.MemoryMapping;
import dev.polystack.host.proc.ProcFs;
import dev.polystack.host.proc.ProcReadException;
import dev.polystack.host.ptrace.PtraceConstants;
import dev.polystack.host.ptrace.Tracer;
import dev.polystack.host.ptrace.WaitStatus;
import dev.polystack.host.sampling.SamplingException;
import dev.polystack.host.sampling.TargetExit;
import dev.polystack.host.sampling.ptrace.PtraceSampler;
import dev.polystack.host.sys.SyscallException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeoutException;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;

/**
 * {@code polystack probe}: places uprobe session links (or, with {@code hardware}, execution
 * breakpoints: {@link HardwareBreakpoints}) on the resolved sites of one process and runs a
 * monitor on them in the kernel until the duration, a stop request or the target's exit; then
 * reads the kernel's figures. The target is never stopped (a launched command is held only
 * until its probes are in). docs/probes.md.
 */
public final class ProbeSession {
  /** Ring for args records: 88 bytes each, 4 MiB holds ~47,000 between two reads. */
  static final int RING_BYTES = 4 << 20;
  private static final int POLL_MILLIS = 50;
  /** arch_prctl(ARCH_SET_FS): where a launched program's libraries are mapped, none run. */
  private static final long ARCH_PRCTL = 158;
  private static final long ARCH_SET_FS = 0x1002;
  private static final int SIGKILL = 9;

  /**
   * What to run.
   *
   * @param durationNanos end after this long; 0: at a stop request or the target's exit
   * @param hardware place the sites with hardware breakpoints
   */
  public record Options(ProbeMonitor.Kind kind, boolean perThread, long durationNanos,
      boolean hardware) {
    public Options {
      if (durationNanos < 0) {
        throw new IllegalArgumentException("duration < 0");
      }
    }

    public Options(ProbeMonitor.Kind kind, boolean perThread, long durationNanos) {
      this(kind, perThread, durationNanos, false);
    }
  }

  /**
   * One args record: registers at the hit.
   *
   * @param monotonicNanos CLOCK_MONOTONIC at the hit: the entry, or the return
   * @param args rdi..r9 at the call's entry, or null for a return whose entry's registers were
   *     not kept (counted as return_args_lost)
   * @param decoded what a plug-in's decoder made of the registers, or null (no decoder for the
   *     site, or it failed: counted as decode_failed)
   */
  public record Hit(ProbeSite site, int pid, int tid, long monotonicNanos, long[] args,
      boolean atReturn, long rax, long durationNanos, SiteDecoders.Decoded decoded) {
    public Hit(ProbeSite site, int pid, int tid, long monotonicNanos, long[] args,
        boolean atReturn, long rax, long durationNanos) {
      this(site, pid, tid, monotonicNanos, args, atReturn, rax, durationNanos, null);
    }

    Hit withDecoded(SiteDecoders.Decoded d) {
      return new Hit(site, pid, tid, monotonicNanos, args, atReturn, rax, durationNanos, d);
    }
  }

  /** Where hits and the start go as they happen. */
  public interface Sink {
    /** The probes are in: {@code sites} of process {@code pid} are being monitored. */
    void started(int pid, List<ProbeSite> sites) throws IOException;

    /**
     * Before {@link #started}, for an args run: which plug-in decodes each site's records
     * ({@link SiteDecoders#decoderOf}).
     */
    default void decoders(SiteDecoders decoders) {}

    /** An args record (args monitor only). */
    void hit(Hit hit) throws IOException;

    /** The hits handed over so far are complete: written out for a reader watching live. */
    default void flush() throws IOException {}

    /** Figures so far, every poll interval (for exporters); cheap to ignore. */
    default void progress(Figures figures) {}
  }

  /** A site's figures. */
  public record SiteFigures(ProbeSite site, long calls, ProbeMonitor.Latency latency) {}

  /** The kernel's figures at one moment. */
  public record Figures(int pid, List<SiteFigures> sites, List<ProbeMonitor.ThreadStats> threads,
      Map<String, Long> counters) {}

  /** How the run ended. */
  public enum End { DURATION, STOPPED, TARGET_EXITED }

  /**
   * @param targetExit the launched command's wait status, or null
   * @param killedAtEnd the launched command was still running at the end and was ended
   */
  public record Result(Figures figures, End end, WaitStatus targetExit, boolean killedAtEnd,
      long hitsUndelivered) {}

  /** Bad input (a site that is not there, no such process): exit 2. */
  public static final class BadInput extends Exception {
    private static final long serialVersionUID = 1L;

    BadInput(String message) {
      super(message);
    }
  }

  /** The probes could not run (kernel, permissions, a launched program that failed). */
  public static final class Failure extends Exception {
    private static final long serialVersionUID = 1L;

    Failure(String message) {
      super(message);
    }
  }

  private static final ProbeMonitor.Latency NO_LATENCY =
      new ProbeMonitor.Latency(new long[ProbeMonitor.BUCKETS], 0, 0);

  private final ProcFs proc;
  private final SiteDecoders.Source decoderSource;
  private final Consumer<String> warn;
  private final RuntimeSites runtimeSites;

  /** A session whose args records stay raw registers. */
  public ProbeSession(ProcFs proc) {
    this(proc, (image, symbol) -> Optional.empty(), s -> { }, RuntimeSites.NONE);
  }

  /**
   * @param decoders asked for each site's argument decoder in an args run
   * @param warn receives one line the first time a decoder fails
   * @param runtimeSites resolves runtime-level sites ({@code lua:CHUNK:LINE})
   */
  public ProbeSession(ProcFs proc, SiteDecoders.Source decoders, Consumer<String> warn,
      RuntimeSites runtimeSites) {
    this.proc = proc;
    this.decoderSource = decoders;
    this.warn = warn;
    this.runtimeSites = runtimeSites;
  }

  /** Probes running process {@code pid}. */
  public Result attach(int pid, List<SiteSpec> specs, Options options, BooleanSupplier stop,
      Sink sink) throws BadInput, Failure, IOException {
    List<ProbeSite> sites = resolve(pid, specs, options);
    SiteDecoders decoding = decoders(pid, sites, options);
    try (ProbeMonitor monitor = open(options);
        TargetExit exit = TargetExit.watch(proc, pid, null)) {
      place(monitor, pid, sites, options);
      return run(monitor, pid, sites, decoding, options, stop, exit, sink, null);
    } catch (SamplingException e) {
      throw new BadInput(e.getMessage());
    }
  }

  /**
   * Starts {@code command} and probes it from before its first instruction of its own: it is
   * held at its thread setup (its libraries mapped, none of their code run) until the probes
   * are in. At the end it is ended if it still runs (it does not outlive its probes' run).
   *
   * @param as whose credentials it runs with; null: polystack's
   */
  public Result launch(List<String> command, Credentials as, List<SiteSpec> specs,
      Options options, BooleanSupplier stop, Sink sink) throws BadInput, Failure, IOException {
    try (ProbeMonitor monitor = open(options)) {
      ChildProcess child;
      try {
        Launcher launcher = Launcher.command(command).startStopped(true).killedWithPolystack();
        child = (as == null ? launcher : launcher.runAs(as)).start();
      } catch (SyscallException e) {
        throw new Failure("cannot start " + command.get(0) + ": " + e.getMessage());
      }
      try (child) {
        int pid = child.pid();
        List<ProbeSite> sites;
        SiteDecoders decoding;
        try (Tracer tracer = Tracer.start(pid)) {
          try {
            child.seizeAndRunToExec(tracer,
                PtraceSampler.OPTIONS | PtraceConstants.O_TRACESYSGOOD, Duration.ofSeconds(10));
            child.runToSyscall(tracer, ARCH_PRCTL, ARCH_SET_FS, Duration.ofSeconds(10));
          } catch (SyscallException | TimeoutException e) {
            throw new Failure("cannot run " + command.get(0) + " to its thread setup, where it"
                + " is probed: " + e.getMessage());
          }
          try {
            sites = resolve(pid, specs, options);
            decoding = decoders(pid, sites, options);
            place(monitor, pid, sites, options);
          } catch (BadInput | Failure e) {
            // Killed where it is held: a command refused for bad input runs none of its code.
            try {
              child.kill(SIGKILL);
            } catch (SyscallException kill) {
              // gone already; the child's close reaps it either way
            }
            throw e;
          }
          try {
            tracer.detach(pid, 0);
          } catch (SyscallException e) {
            throw new Failure("cannot let process " + pid + " run: " + e.getMessage());
          }
        }
        Result r = run(monitor, pid, sites, decoding, options, stop, TargetExit.ofChild(child),
            sink, child);
        if (r.targetExit() != null) {
          return r;
        }
        ChildProcess.Ending end = child.end();
        return new Result(r.figures(), r.end(), end.status(), end.killedByUs(),
            r.hitsUndelivered());
      }
    }
  }

  private List<ProbeSite> resolve(int pid, List<SiteSpec> specs, Options options)
      throws BadInput {
    for (SiteSpec s : specs) {
      if (s.runtime() && options.kind() != ProbeMonitor.Kind.COUNT) {
        throw new BadInput(s + ": a Lua site counts entries only (--monitor count): at the"
            + " interpreter's read of the function's first instruction the registers hold"
            + " the interpreter's state, not Lua arguments, and no return is watched");
      }
    }
    List<MemoryMapping> mappings = mappings(proc, pid);
    try {
      return ProbeSites.resolve(proc.root(), pid, mappings, specs, options.hardware(),
          options.kind() == ProbeMonitor.Kind.LATENCY, runtimeSites);
    } catch (ProbeSites.SiteException e) {
      throw new BadInput(e.getMessage());
    }
  }

  /** The plug-ins' decoders of an args run's sites; none for the other monitors. */
  private SiteDecoders decoders(int pid, List<ProbeSite> sites, Options options)
      throws BadInput {
    if (options.kind() != ProbeMonitor.Kind.ARGS) {
      return SiteDecoders.none();
    }
    return SiteDecoders.find(pid, mappings(proc, pid), sites, decoderSource, warn);
  }

  /** The mappings of {@code pid} ({@link ProcFs} reads a torn maps file again). */
  static List<MemoryMapping> mappings(ProcFs proc, int pid) throws BadInput {
    try {
      return proc.forPid(pid).maps().mappings();
    } catch (ProcReadException e) {
      throw new BadInput("cannot read the mappings of process " + pid + " (" + e.getMessage()
          + "): check the pid (ps -p " + pid + ") and that polystack runs as root");
    }
  }

  private static ProbeMonitor open(Options options) throws Failure {
    String why = BpfSupport.unavailableReason().orElse(null);
    if (why != null) {
      throw new Failure("cannot place probes: " + why);
    }
    try {
      return ProbeMonitor.open(options.kind(), options.perThread(), RING_BYTES,
          options.hardware() ? ProbeMonitor.Mechanism.HARDWARE : ProbeMonitor.Mechanism.UPROBE);
    } catch (BpfLoadException e) {
      throw new Failure("cannot place probes: " + e.getMessage());
    }
  }

  /** One link per probed file, cookie = site index; or each site's breakpoint per thread. */
  private void place(ProbeMonitor monitor, int pid, List<ProbeSite> sites, Options options)
      throws Failure, BadInput {
    if (options.hardware()) {
      List<PerfEventAttr> addresses = new ArrayList<>();
      for (int i = 0; i < sites.size(); i++) {
        ProbeSite site = sites.get(i);
        boolean call = !site.returns().isEmpty();
        monitor.setSite(i, site.spec().atReturn());
        monitor.setHardwareSite(i, site.address(), call ? ProbeMonitor.Breakpoint.CALL
            : ProbeMonitor.Breakpoint.ENTRY);
        addresses.add(site.watchLength() > 0
            ? HardwareBreakpoints.watch(site.address(), site.watchLength())
            : HardwareBreakpoints.attr(site.address()));
        for (long ret : site.returns()) {
          monitor.setHardwareSite(i, ret, ProbeMonitor.Breakpoint.RET);
          addresses.add(HardwareBreakpoints.attr(ret));
        }
      }
      monitor.watchSignals(pid);
      HardwareBreakpoints.arm(proc, monitor, pid, addresses);
      return;
    }
    Map<Path, List<Integer>> byFile = new LinkedHashMap<>();
    for (int i = 0; i < sites.size(); i++) {
      monitor.setSite(i, sites.get(i).spec().atReturn());
      byFile.computeIfAbsent(sites.get(i).file(), f -> new ArrayList<>()).add(i);
    }
    for (Map.Entry<Path, List<Integer>> e : byFile.entrySet()) {
      List<Integer> index = e.getValue();
      long[] offsets = index.stream().mapToLong(i -> sites.get(i).fileOffset()).toArray();
      long[] cookies = index.stream().mapToLong(Integer::longValue).toArray();
      try {
        monitor.attach(e.getKey(), offsets, cookies, pid);
      } catch (BpfLoadException ex) {
        if (ex.errno() == dev.polystack.host.bpf.UprobeLink.ENOTSUPP) {
          throw new BadInput(ex.getMessage());
        }
        throw new Failure(ex.getMessage());
      }
    }
  }

  private Result run(ProbeMonitor monitor, int pid, List<ProbeSite> sites,
      SiteDecoders decoding, Options options, BooleanSupplier stop, TargetExit exit, Sink sink,
      ChildProcess child) throws IOException {
    if (options.kind() == ProbeMonitor.Kind.ARGS) {
      sink.decoders(decoding);
    }
    sink.started(pid, sites);
    long deadline = options.durationNanos() == 0 ? Long.MAX_VALUE
        : System.nanoTime() + options.durationNanos();
    long[] undelivered = {0};
    End end;
    IOException[] failed = {null};
    long nextProgress = System.nanoTime() + 1_000_000_000L;
    while (true) {
      if (options.kind() == ProbeMonitor.Kind.ARGS) {
        if (drain(monitor, pid, sites, decoding, sink, POLL_MILLIS, failed,
            undelivered) > 0
            && failed[0] == null) {
          sink.flush();
        }
      } else {
        sleep(POLL_MILLIS);
      }
      if (failed[0] != null) {
        throw failed[0];
      }
      if (System.nanoTime() >= nextProgress) {
        sink.progress(figures(monitor, pid, sites, decoding, options.kind(), false));
        nextProgress = System.nanoTime() + 1_000_000_000L;
      }
      if (stop.getAsBoolean()) {
        end = End.STOPPED;
        break;
      }
      if (exit.gone()) {
        end = End.TARGET_EXITED;
        break;
      }
      if (System.nanoTime() >= deadline) {
        end = End.DURATION;
        break;
      }
    }
    monitor.detach();
    if (options.kind() == ProbeMonitor.Kind.ARGS) {
      while (drain(monitor, pid, sites, decoding, sink, 0, failed, undelivered) > 0
          && failed[0] == null) {
        // what the ring still holds
      }
      if (failed[0] != null) {
        throw failed[0];
      }
    }
    Figures f = figures(monitor, pid, sites, decoding, options.kind(), true);
    return new Result(f, end, end == End.TARGET_EXITED ? exit.status() : null, false,
        undelivered[0]);
  }

  private static int drain(ProbeMonitor monitor, int pid, List<ProbeSite> sites,
      SiteDecoders decoding, Sink sink, int timeout, IOException[] failed, long[] bad) {
    return monitor.poll(timeout, b -> {
      if (failed[0] != null) {
        return;
      }
      Hit h = parse(b, pid, sites);
      if (h == null) {
        bad[0]++;
        return;
      }
      SiteDecoders.Decoded d = decoding.decode(h);
      try {
        sink.hit(d == null ? h : h.withDecoded(d));
      } catch (IOException e) {
        failed[0] = e;
      }
    });
  }

  /** An args record; null when it is not one this program writes (counted by the caller). */
  static Hit parse(ByteBuffer raw, int pid, List<ProbeSite> sites) {
    ByteBuffer b = raw.duplicate().order(ByteOrder.LITTLE_ENDIAN);
    if (b.remaining() < ProbeMonitor.RECORD_BYTES) {
      return null;
    }
    int base = b.position();
    int tid = b.getInt(base + 4);
    long time = b.getLong(base + 8);
    int site = b.getInt(base + 16);
    int flags = b.getInt(base + 20);
    if (site < 0 || site >= sites.size()) {
      return null;
    }
    long[] args = null;
    if ((flags & ProbeMonitor.RECORD_ARGS) != 0) {
      args = new long[6];
      for (int i = 0; i < 6; i++) {
        args[i] = b.getLong(base + 24 + 8 * i);
      }
    }
    boolean ret = (flags & ProbeMonitor.RECORD_RETURN) != 0;
    if (!ret && args == null) {
      return null; // an entry record always carries its registers
    }
    return new Hit(sites.get(site), pid, tid, time, args, ret, b.getLong(base + 72),
        ret ? b.getLong(base + 80) : 0);
  }

  /**
   * The kernel's figures; the latency buckets only for a latency run, the (site, thread) table
   * only with {@code withThreads} (up to 4,096 lookups: at the end, not at every poll); an args
   * run's counters also say how many records a decoder failed on.
   */
  private static Figures figures(ProbeMonitor monitor, int pid, List<ProbeSite> sites,
      SiteDecoders decoding, ProbeMonitor.Kind kind, boolean withThreads) {
    try {
      List<SiteFigures> out = new ArrayList<>();
      for (int i = 0; i < sites.size(); i++) {
        out.add(new SiteFigures(sites.get(i), monitor.hits(i),
            kind == ProbeMonitor.Kind.LATENCY ? monitor.latency(i) : NO_LATENCY));
      }
      Map<String, Long> counters = monitor.counters();
      if (kind == ProbeMonitor.Kind.ARGS) {
        counters = new LinkedHashMap<>(counters);
        counters.put(SiteDecoders.DECODE_FAILED, decoding.failed());
      }
      return new Figures(pid, List.copyOf(out), withThreads ? monitor.threads() : List.of(),
          counters);
    } catch (BpfException e) {
      throw new IllegalStateException("reading the probe monitor's maps: " + e.getMessage(), e);
    }
  }

  private static void sleep(int millis) {
    try {
      Thread.sleep(millis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
