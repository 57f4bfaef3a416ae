package dev.polystack.host.bpf;

import dev.polystack.host.perf.PerfEvent;
import dev.polystack.host.sys.Native;
import dev.polystack.host.sys.SyscallException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import jnr.ffi.Pointer;

/**
 * The probe monitor program (probe_monitor.bpf.c) and its maps: counts, latency buckets and
 * argument records of {@code polystack probe}, kept in the kernel, and what runs it: the uprobe
 * session links, one per probed file, or (hardware mode) the execution-breakpoint perf events
 * whose handler it is. Everything is owned by file descriptors of this process: a killed
 * polystack leaves no probe in the target (docs/probes.md).
 */
public final class ProbeMonitor implements AutoCloseable {
  /** Sites over every link (probe_monitor.bpf.c MAX_SITES). */
  public static final int MAX_SITES = 64;
  /** Latency buckets per site: bucket i holds [2^i, 2^(i+1)) ns, as LatencyStats. */
  public static final int BUCKETS = 64;
  /** (site, thread) entries kept with {@code perThread}. */
  public static final int THREADS = 4096;
  /** Size of an args record. */
  public static final int RECORD_BYTES = 88;
  /** An args record taken at the return (rax and the duration are set). */
  public static final int RECORD_RETURN = 1;
  /** An args record whose args are the call's registers at its entry. */
  public static final int RECORD_ARGS = 2;

  static final String OBJECT_PROPERTY = "polystack.bpf.probe.object";
  static final String RESOURCE = "/dev/polystack/host/bpf/probe_monitor.bpf.o";
  private static final String PROGRAM = "probe_monitor";
  private static final String HW_PROGRAM = "probe_monitor_hw";
  private static final String SIGNAL_PROGRAM = "probe_sigtrap";
  private static final long IOC_SET_BPF = 0x40042408L;
  /** Hardware mode only: SIGTRAPs the kernel raised in the target for a breakpoint. */
  public static final String SIGTRAP_DELIVERED = "sigtrap_delivered";
  /** Hardware mode only: breakpoint hits whose handler the kernel did not run. */
  public static final String HANDLER_NOT_RUN = "handler_not_run";
  private static final int HIST_SLOTS = BUCKETS + 2;
  private static final int THREAD_STATS_BYTES = 24 + 8 * BUCKETS;
  private static final List<String> COUNTERS = List.of("entries", "returns", "records",
      "ring_full", "thread_table_full", "return_unmatched", "no_site", "return_args_lost");

  /** What places the sites. */
  public enum Mechanism {
    /** Uprobe session links (an int3 in the target's copy of the code). */
    UPROBE,
    /** Execution breakpoints in the debug registers: no byte of the target changes. */
    HARDWARE
  }

  /** What runs at a hit (probe_monitor.bpf.c MON_*). */
  public enum Kind {
    COUNT(1), LATENCY(2), ARGS(3);

    final int code;

    Kind(int code) {
      this.code = code;
    }
  }

  /** A site's latency: its log2 buckets, the sum and the largest duration. */
  public record Latency(long[] buckets, long sumNanos, long maxNanos) {}

  /** One thread's figures at one site. */
  public record ThreadStats(int site, int tid, long calls, Latency latency) {}

  private final LibBpf lib = Bpf.lib();
  private final BpfObject object;
  private final int possibleCpus;
  private final int programFd;
  private final int sitesFd;
  private final int hitsFd;
  private final int histFd;
  private final int threadsFd;
  private final int countersFd;
  private final RingReader ring;
  private final List<UprobeLink> links = new ArrayList<>();
  private final List<PerfEvent> breakpoints = new ArrayList<>();
  private final Mechanism mechanism;
  private final int hwSitesFd;
  private final int hwTargetsFd;
  /** The raw tracepoint counting SIGTRAPs (hardware mode), or -1. */
  private final int signalLink;
  private long hitsAtDetach = -1;
  private boolean closed;

  private ProbeMonitor(BpfObject object, int possibleCpus, Mechanism mechanism)
      throws BpfLoadException {
    this.object = object;
    this.possibleCpus = possibleCpus;
    this.mechanism = mechanism;
    boolean hw = mechanism == Mechanism.HARDWARE;
    this.programFd = object.programFd(hw ? HW_PROGRAM : PROGRAM);
    this.hwSitesFd = object.mapFd("hw_sites");
    this.hwTargetsFd = object.mapFd("hw_targets");
    this.sitesFd = object.mapFd("sites");
    this.hitsFd = object.mapFd("hits");
    this.histFd = object.mapFd("hist");
    this.threadsFd = object.mapFd("threads");
    this.countersFd = object.mapFd("counters");
    this.ring = RingReader.open(object.mapFd("events"));
    // Only a counter: a kernel without the tracepoint still probes, the summary then lacks it.
    this.signalLink = hw ? lib.bpf_raw_tracepoint_open("signal_generate",
        object.programFd(SIGNAL_PROGRAM)) : -1;
  }

  /**
   * Loads the program for monitor {@code kind}; {@code perThread} keeps figures per (site,
   * thread) as well. {@code ringBytes}: a power of two, at least a page (args records).
   */
  public static ProbeMonitor open(Kind kind, boolean perThread, int ringBytes)
      throws BpfLoadException {
    return open(kind, perThread, ringBytes, Mechanism.UPROBE);
  }

  /** As {@link #open(Kind, boolean, int)}, for sites placed by {@code mechanism}. */
  public static ProbeMonitor open(Kind kind, boolean perThread, int ringBytes,
      Mechanism mechanism) throws BpfLoadException {
    if (ringBytes < 4096 || Integer.bitCount(ringBytes) != 1) {
      throw new IllegalArgumentException("ring size must be a power of two >= 4096: " + ringBytes);
    }
    if (Bpf.loadFailure().isPresent()) {
      throw new BpfLoadException(Bpf.INSTALL_HINT);
    }
    BpfObject object = BpfObject.open(ObjectBytes.read(RESOURCE, OBJECT_PROPERTY),
        "probe_monitor.bpf.o");
    ProbeMonitor monitor = null;
    try {
      int cpus = Bpf.lib().libbpf_num_possible_cpus();
      if (cpus <= 0) {
        throw BpfLoadException.of("counting possible CPUs", cpus, "",
            "check /sys/devices/system/cpu/possible");
      }
      object.setMaxEntries("events", ringBytes);
      boolean hw = mechanism == Mechanism.HARDWARE;
      object.setAutoload(PROGRAM, !hw);
      object.setAutoload(HW_PROGRAM, hw);
      object.setAutoload(SIGNAL_PROGRAM, hw);
      if (hw) {
        object.load(HW_PROGRAM);
      } else {
        object.setExpectedAttachType(PROGRAM, UprobeLink.BPF_TRACE_UPROBE_SESSION);
        try {
          object.load(PROGRAM);
        } catch (BpfLoadException e) {
          throw new BpfLoadException("probes need a kernel with uprobe sessions (Linux 6.13 or"
              + " later); the kernel refused the probe program: " + e.getMessage(), e);
        }
      }
      monitor = new ProbeMonitor(object, cpus, mechanism);
      Pointer key = Bpf.allocate(4);
      key.putInt(0, 0);
      Pointer config = Bpf.allocate(8);
      config.putInt(0, kind.code);
      config.putInt(4, perThread ? 1 : 0);
      monitor.update(object.mapFd("config"), key, config, "configuring the probe monitor");
      return monitor;
    } catch (BpfLoadException | RuntimeException e) {
      if (monitor != null) {
        monitor.close();
      } else {
        object.close();
      }
      throw e;
    }
  }

  /** Declares site {@code index} (a link cookie); {@code atReturn}: it counts at the return. */
  public synchronized void setSite(int index, boolean atReturn) {
    checkIndex(index);
    Pointer key = Bpf.allocate(4);
    key.putInt(0, index);
    Pointer value = Bpf.allocate(8);
    value.putInt(0, atReturn ? 1 : 0);
    value.putInt(4, 0);
    update(sitesFd, key, value, "declaring probe site " + index);
  }

  /** Probes {@code offsets} of {@code file} (cookie: site index) for process {@code pid}. */
  public synchronized void attach(Path file, long[] offsets, long[] sites, int pid)
      throws BpfLoadException {
    checkOpen();
    links.add(UprobeLink.attach(programFd, file, offsets, sites, pid, "probes"));
  }

  /** What a hardware breakpoint of a site is (probe_monitor.bpf.c HW_*). */
  public enum Breakpoint {
    /** The site's entry, where the monitor runs. */
    ENTRY(0),
    /** The entry of a site whose return is watched: the call's time and registers are kept. */
    CALL(1),
    /** One of the function's ret instructions: the call kept at its entry ends here. */
    RET(2);

    final int code;

    Breakpoint(int code) {
      this.code = code;
    }
  }

  /**
   * Declares a breakpoint of hardware site {@code index} at {@code address} in the target
   * (hardware mode).
   */
  public synchronized void setHardwareSite(int index, long address, Breakpoint kind) {
    checkIndex(index);
    checkMechanism(Mechanism.HARDWARE);
    Pointer key = Bpf.allocate(8);
    key.putLong(0, address);
    Pointer value = Bpf.allocate(8);
    value.putInt(0, index);
    value.putInt(4, kind.code);
    update(hwSitesFd, key, value, "declaring hardware site " + index);
  }

  /** Counts the SIGTRAPs the kernel raises in process {@code tgid} (hardware mode). */
  public synchronized void watchSignals(int tgid) {
    checkMechanism(Mechanism.HARDWARE);
    Pointer key = Bpf.allocate(4);
    key.putInt(0, tgid);
    Pointer one = Bpf.allocate(1);
    one.putByte(0, (byte) 1);
    update(hwTargetsFd, key, one, "watching the signals of " + tgid);
  }

  /**
   * Makes the program the handler of a breakpoint {@code event} (before it is enabled); this
   * monitor owns the event from then on and closes it in {@link #detach}.
   */
  public synchronized void attach(PerfEvent event)
      throws BpfLoadException {
    checkOpen();
    checkMechanism(Mechanism.HARDWARE);
    breakpoints.add(event);
    if (Native.libc().ioctl(event.fd(), IOC_SET_BPF, programFd) < 0) {
      throw BpfLoadException.of("attaching " + HW_PROGRAM + " to a breakpoint",
          Native.errno(), "",
          "this kernel refuses BPF programs on breakpoint events");
    }
  }

  /**
   * Hits the breakpoint events themselves counted (hardware mode; with their inherited copies):
   * so far, or at {@link #detach}; -1 if unreadable.
   */
  public synchronized long breakpointHits() {
    if (hitsAtDetach >= 0 || breakpoints.isEmpty()) {
      return Math.max(0, hitsAtDetach);
    }
    long sum = 0;
    for (PerfEvent e : breakpoints) {
      try {
        sum += e.readCount();
      } catch (SyscallException ex) {
        return -1;
      }
    }
    return sum;
  }

  /**
   * Removes every probe (the kernel restores the target's code; breakpoints go with their
   * inherited copies); the maps stay readable.
   */
  public synchronized void detach() {
    links.forEach(UprobeLink::close);
    links.clear();
    if (!breakpoints.isEmpty()) {
      hitsAtDetach = breakpointHits();
    }
    for (PerfEvent e : breakpoints) {
      try {
        e.close();
      } catch (SyscallException ignored) {
        // close(2) of a perf fd only fails for a bad fd: nothing left to release
      }
    }
    breakpoints.clear();
  }

  /** Hits of site {@code index} so far (calls at a latency site), summed over CPUs. */
  public synchronized long hits(int index) {
    checkIndex(index);
    return percpu(hitsFd, index, "hits of site " + index);
  }

  /** The latency figures of site {@code index} so far. */
  public synchronized Latency latency(int index) {
    checkIndex(index);
    long[] buckets = new long[BUCKETS];
    int base = index * HIST_SLOTS;
    for (int b = 0; b < BUCKETS; b++) {
      buckets[b] = percpu(histFd, base + b, "latency of site " + index);
    }
    long sum = percpu(histFd, base + BUCKETS, "latency of site " + index);
    long max = 0;
    Pointer key = Bpf.allocate(4);
    Pointer values = Bpf.allocate(8 * possibleCpus);
    key.putInt(0, base + BUCKETS + 1);
    lookup(histFd, key, values, "latency of site " + index);
    for (int cpu = 0; cpu < possibleCpus; cpu++) {
      max = Math.max(max, values.getLong(8L * cpu));
    }
    return new Latency(buckets, sum, max);
  }

  /** Every (site, thread) entry, at most {@value #THREADS}. */
  public synchronized List<ThreadStats> threads() {
    checkOpen();
    List<ThreadStats> out = new ArrayList<>();
    Pointer key = Bpf.allocate(8);
    Pointer next = Bpf.allocate(8);
    Pointer value = Bpf.allocate(THREAD_STATS_BYTES);
    Pointer cursor = null;
    for (int n = 0; n < THREADS * 2; n++) {
      if (lib.bpf_map_get_next_key(threadsFd, cursor, next) < 0) {
        break;
      }
      if (lib.bpf_map_lookup_elem(threadsFd, next, value) == 0) {
        long[] buckets = new long[BUCKETS];
        for (int b = 0; b < BUCKETS; b++) {
          buckets[b] = value.getLong(24 + 8L * b);
        }
        out.add(new ThreadStats(next.getInt(0), next.getInt(4), value.getLong(0),
            new Latency(buckets, value.getLong(8), value.getLong(16))));
      }
      key.transferFrom(0, next, 0, 8);
      cursor = key;
    }
    return out;
  }

  /** The kernel counters summed over CPUs, cumulative since open, by lower_snake name. */
  public synchronized Map<String, Long> counters() {
    Map<String, Long> out = new LinkedHashMap<>();
    for (int i = 0; i < COUNTERS.size(); i++) {
      out.put(COUNTERS.get(i), percpu(countersFd, i, "counter " + COUNTERS.get(i)));
    }
    if (mechanism == Mechanism.HARDWARE) {
      if (signalLink >= 0) {
        out.put(SIGTRAP_DELIVERED, percpu(countersFd, COUNTERS.size(), "counter "
            + SIGTRAP_DELIVERED));
      }
      // A hit whose handler did not run (the kernel skips a BPF program that would nest in
      // another on the same CPU): the event counted it, the program did not.
      long hits = breakpointHits();
      if (hits >= 0) {
        out.put(HANDLER_NOT_RUN, Math.max(0, hits - out.get("entries") - out.get("returns")
            - out.get("no_site")));
      }
    }
    return out;
  }

  /** Hands args records (read-only, little-endian) to {@code sink}; see RingReader#poll. */
  public int poll(int timeoutMillis, Consumer<ByteBuffer> sink) {
    synchronized (this) {
      checkOpen();
    }
    return ring.poll(timeoutMillis, sink);
  }

  private long percpu(int fd, int index, String what) {
    Pointer key = Bpf.allocate(4);
    Pointer values = Bpf.allocate(8 * possibleCpus);
    key.putInt(0, index);
    lookup(fd, key, values, what);
    long sum = 0;
    for (int cpu = 0; cpu < possibleCpus; cpu++) {
      sum += values.getLong(8L * cpu);
    }
    return sum;
  }

  private void lookup(int fd, Pointer key, Pointer values, String what) {
    checkOpen();
    int err = lib.bpf_map_lookup_elem(fd, key, values);
    if (err < 0) {
      throw new BpfException("reading " + what, err);
    }
  }

  private void update(int fd, Pointer key, Pointer value, String what) {
    checkOpen();
    int err = lib.bpf_map_update_elem(fd, key, value, 0);
    if (err < 0) {
      throw new BpfException(what, err);
    }
  }

  private void checkIndex(int index) {
    if (index < 0 || index >= MAX_SITES) {
      throw new IllegalArgumentException("site index must be 0.." + (MAX_SITES - 1));
    }
  }

  private void checkMechanism(Mechanism want) {
    if (mechanism != want) {
      throw new IllegalStateException("the probe monitor was opened for " + mechanism);
    }
  }

  private void checkOpen() {
    if (closed) {
      throw new IllegalStateException("probe monitor is closed");
    }
  }

  /** Removes the probes, then frees the ring, maps and program. Idempotent. */
  @Override
  public synchronized void close() {
    if (closed) {
      return;
    }
    detach();
    closed = true;
    if (signalLink >= 0) {
      Native.libc().close(signalLink);
    }
    ring.close();
    object.close();
  }
}
