package dev.polystack.host.bpf;

import dev.polystack.host.perf.PerfConstants;
import dev.polystack.host.perf.PerfEvent;
import dev.polystack.host.perf.PerfEventAttr;
import dev.polystack.host.sys.Errno;
import dev.polystack.host.sys.Native;
import dev.polystack.host.sys.SyscallException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import jnr.ffi.Pointer;

/**
 * The tick-time capture engine: one BPF program (tick_capture.bpf.c) on a cpu-clock perf event
 * per online CPU. For threads of target processes it records, at every tick, the user
 * registers, the stack from under the red zone and the regions of up to {@value #MAX_PLANS}
 * capture plans, into a ring buffer read with {@link #poll}.
 *
 * <p>Everything is owned by file descriptors of this process: if the JVM dies, even by SIGKILL,
 * the kernel detaches and frees it all.
 */
public final class TickCapture implements AutoCloseable {
  /** Largest record the program emits. */
  public static final int RECORD_MAX = 65536;
  /** Largest stack copy per record. */
  public static final int STACK_MAX = 32768;
  /** Plans per target process. */
  public static final int MAX_PLANS = 4;
  /** sizeof(struct plan). */
  public static final int PLAN_BYTES = 1160;
  /** Ring buffer size compiled into the object. */
  public static final int DEFAULT_RING_BYTES = 8 << 20;

  static final String OBJECT_PROPERTY = "polystack.bpf.object";
  static final String RESOURCE = "/dev/polystack/host/bpf/tick_capture.bpf.o";
  private static final String PROGRAM = "tick_capture";

  // _IOW('$', 8, __u32)
  private static final long IOC_SET_BPF = 0x40042408L;
  // struct bpf_prog_info (linux/bpf.h): run_time_ns and run_cnt; older kernels fill fewer bytes.
  private static final int PROG_INFO_SIZE = 232;
  private static final int PROG_INFO_RUN_TIME_NS = 192;
  private static final int PROG_INFO_RUN_CNT = 200;
  private static final long BPF_ANY = 0;
  private static final int PAGE = 4096;

  private final LibBpf lib = Bpf.lib();
  private final BpfObject object;
  private final int possibleCpus;
  private final int programFd;
  private final int targetsFd;
  private final int plansFd;
  private final int countersFd;
  private final int settingsFd;
  private final List<PerfEvent> events = new ArrayList<>();
  /** Raw tracepoint links of the process event programs; closing one detaches it. */
  private final List<Integer> links = new ArrayList<>();
  private RingReader ring;
  private AllocationProbes allocations;
  private boolean closed;

  /** What the capture does beyond process events. */
  public enum Feature {
    /** The cpu-clock tick program on every online CPU. */
    TICKS,
    /** The allocation program (uprobe sessions), attached per process by {@link #allocations}. */
    ALLOC
  }

  private TickCapture(BpfObject object, int possibleCpus) throws BpfLoadException {
    this.object = object;
    this.possibleCpus = possibleCpus;
    this.programFd = object.programFd(PROGRAM);
    this.targetsFd = object.mapFd("targets");
    this.plansFd = object.mapFd("plans");
    this.countersFd = object.mapFd("counters");
    this.settingsFd = object.mapFd("settings");
  }

  /**
   * What the program captures beyond the targets added one by one.
   *
   * @param allProcesses every user-space process is a target (kernel threads and {@code
   *     selfTgid} excepted), each copying {@code stackBytes} of stack
   * @param events exec and exit of targets come as {@link ProcessEvent}s
   * @param watchExec exec of every process comes as an event too (a selection by name)
   * @param cgroup with {@code allProcesses}, only the processes of this cgroup v2 or below it,
   *     decided at each tick; null: every cgroup
   */
  public record Settings(boolean allProcesses, int selfTgid, int stackBytes, boolean events,
      boolean watchExec, Cgroup cgroup) {
    public Settings {
      if (stackBytes < 0 || stackBytes > STACK_MAX) {
        throw new IllegalArgumentException("stack bytes must be 0.." + STACK_MAX + ": "
            + stackBytes);
      }
      if (cgroup != null && !allProcesses) {
        throw new IllegalArgumentException("a cgroup narrows allProcesses");
      }
    }

    public Settings(boolean allProcesses, int selfTgid, int stackBytes, boolean events,
        boolean watchExec) {
      this(allProcesses, selfTgid, stackBytes, events, watchExec, null);
    }

    /** Targets added one by one, no events: what a record of chosen processes needs. */
    public static Settings targetsOnly() {
      return new Settings(false, 0, 0, false, false);
    }
  }

  /**
   * A cgroup v2 as the kernel names it: its id (the inode of its directory) and its depth below
   * the root (the root is 0).
   */
  public record Cgroup(long id, int level) {
    public Cgroup {
      if (id <= 0 || level < 0) {
        throw new IllegalArgumentException("cgroup id " + id + ", level " + level);
      }
    }
  }

  /**
   * Sets what is captured beyond added targets. Pids are those of polystack's own pid namespace
   * whatever the settings (docs/operations.md, "Inside a container").
   */
  public synchronized void configure(Settings s) {
    Pointer value = Bpf.allocate(48);
    PidNamespace ns = PidNamespace.ofThisProcess();
    int flags = (s.allProcesses() ? 1 : 0) | (ns.isInitial() ? 0 : 2) | (s.events() ? 4 : 0)
        | (s.watchExec() ? 8 : 0) | (s.cgroup() != null ? 16 : 0);
    value.putInt(0, flags);
    value.putInt(4, s.selfTgid());
    value.putInt(8, s.stackBytes());
    value.putInt(12, 0);
    value.putLong(16, ns.device());
    value.putLong(24, ns.inode());
    value.putLong(32, s.cgroup() == null ? 0 : s.cgroup().id());
    value.putInt(40, s.cgroup() == null ? 0 : s.cgroup().level());
    value.putInt(44, 0);
    Pointer key = Bpf.allocate(4);
    key.putInt(0, 0);
    update(settingsFd, key, value, "configuring the capture");
  }

  /**
   * Loads the program and starts it on every online CPU at {@code rateHz}. It records nothing
   * until {@link #addTarget}. {@code ringBytes}: a power of two, at least a page.
   */
  public static TickCapture open(int rateHz, int ringBytes) throws BpfLoadException {
    return open(rateHz, ringBytes, c -> { });
  }

  /**
   * {@link #open(int, int)} that runs {@code setup} (settings, first targets) once the program
   * is loaded and before any CPU's event exists: whoever waits for polystack's perf events to
   * appear then knows its targets are already captured.
   */
  public static TickCapture open(int rateHz, int ringBytes,
      java.util.function.Consumer<TickCapture> setup) throws BpfLoadException {
    return open(rateHz, ringBytes, setup, java.util.EnumSet.of(Feature.TICKS));
  }

  /**
   * {@link #open(int, int, Consumer)} with a choice of programs: without {@link Feature#ALLOC}
   * the allocation program is not even loaded (CPU profiles keep working on kernels without
   * uprobe sessions); without {@link Feature#TICKS} no cpu-clock event is opened.
   */
  public static TickCapture open(int rateHz, int ringBytes,
      java.util.function.Consumer<TickCapture> setup, java.util.Set<Feature> features)
      throws BpfLoadException {
    if (rateHz < 1 || rateHz > 100_000) {
      throw new IllegalArgumentException("rate must be 1..100000 Hz: " + rateHz);
    }
    if (ringBytes < PAGE || Integer.bitCount(ringBytes) != 1) {
      throw new IllegalArgumentException("ring size must be a power of two >= 4096: " + ringBytes);
    }
    if (Bpf.loadFailure().isPresent()) {
      throw new BpfLoadException(Bpf.INSTALL_HINT); // jnr's message lists search paths
    }
    byte[] elf = objectBytes();
    BpfObject object = BpfObject.open(elf, "tick_capture.bpf.o");
    TickCapture capture = null;
    try {
      int cpus = Bpf.lib().libbpf_num_possible_cpus();
      if (cpus <= 0) {
        throw BpfLoadException.of("counting possible CPUs", cpus, "",
            "check /sys/devices/system/cpu/possible");
      }
      object.setMaxEntries("scratch", cpus);
      object.setMaxEntries("events", ringBytes);
      boolean alloc = features.contains(Feature.ALLOC);
      object.setAutoload(AllocationProbes.PROGRAM, alloc);
      // Each program loaded costs its verification (docs/allocations.md, "Starting").
      object.setAutoload(PROGRAM, features.contains(Feature.TICKS));
      if (alloc) {
        object.setExpectedAttachType(AllocationProbes.PROGRAM,
            UprobeLink.BPF_TRACE_UPROBE_SESSION);
      }
      try {
        // The verifier log is kept for the program a kernel is likeliest to refuse: the
        // allocation program when it is loaded (the tick program may not be).
        object.load(alloc ? AllocationProbes.PROGRAM : PROGRAM);
      } catch (BpfLoadException e) {
        if (alloc) {
          throw new BpfLoadException("allocation profiles need a kernel with uprobe sessions"
              + " (Linux 6.13 or later); the kernel refused the allocation program: "
              + e.getMessage(), e);
        }
        throw e;
      }
      capture = new TickCapture(object, cpus);
      if (alloc) {
        capture.allocations = new AllocationProbes(object, cpus);
      }
      capture.configure(Settings.targetsOnly());
      capture.attachProcessEvents();
      setup.accept(capture);
      capture.start(rateHz, features.contains(Feature.TICKS));
      return capture;
    } catch (BpfLoadException | RuntimeException e) {
      if (capture != null) {
        capture.close();
      } else {
        object.close();
      }
      throw e;
    }
  }

  /** The allocation probes; only when opened with {@link Feature#ALLOC}. */
  public synchronized AllocationProbes allocations() {
    checkOpen();
    if (allocations == null) {
      throw new IllegalStateException("the capture was opened without allocation probes");
    }
    return allocations;
  }

  private void start(int rateHz, boolean ticks) throws BpfLoadException {
    ring = RingReader.open(object.mapFd("events"));
    if (!ticks) {
      return;
    }
    // exclude_idle: the idle task is never a target, so its ticks need not run the program.
    PerfEventAttr attr = PerfEventAttr.builder()
        .type(PerfConstants.TYPE_SOFTWARE)
        .config(PerfConstants.COUNT_SW_CPU_CLOCK)
        .samplePeriod(1_000_000_000L / rateHz)
        .excludeIdle(true)
        .disabled(true)
        .build();
    for (int cpu : onlineCpus()) {
      PerfEvent event;
      try {
        event = PerfEvent.open(attr, -1, cpu, -1, 0);
      } catch (SyscallException e) {
        if (e.errno() == Errno.ENODEV) {
          continue; // went offline since the list was read
        }
        throw new BpfLoadException(e.getMessage(), e);
      }
      events.add(event);
      if (Native.libc().ioctl(event.fd(), IOC_SET_BPF, programFd) < 0) {
        throw BpfLoadException.of("attaching " + PROGRAM + " to the cpu-clock event of CPU "
            + cpu, Native.errno(), "", "this kernel refuses BPF programs on perf events");
      }
    }
    // Enabled only once all are attached, so no CPU ticks before the others are ready.
    for (PerfEvent event : events) {
      try {
        event.enable();
      } catch (SyscallException e) {
        throw new BpfLoadException(e.getMessage(), e);
      }
    }
  }

  private void attachProcessEvents() throws BpfLoadException {
    for (String[] p : new String[][] {{"process_exec", "sched_process_exec"},
        {"process_exit", "sched_process_exit"}, {"process_fork", "sched_process_fork"}}) {
      int fd = lib.bpf_raw_tracepoint_open(p[1], object.programFd(p[0]));
      if (fd < 0) {
        throw BpfLoadException.of("attaching " + p[0] + " to the " + p[1] + " tracepoint",
            Bpf.errno(), "", "this kernel refuses raw tracepoint programs (Linux 5.17 or"
                + " later with BTF is needed)");
      }
      links.add(fd);
    }
  }

  /** Captures the threads of {@code tgid}, copying up to {@code stackBytes} of each stack. */
  public void addTarget(int tgid, int stackBytes) {
    addTarget(tgid, stackBytes, false);
  }

  /**
   * Captures the threads of {@code tgid}; with {@code follow}, also every process it creates
   * from then on, and theirs (the kernel adds each as a target at its fork, and says so with a
   * {@link ProcessEvent}).
   */
  public synchronized void addTarget(int tgid, int stackBytes, boolean follow) {
    if (stackBytes < 0 || stackBytes > STACK_MAX) {
      throw new IllegalArgumentException("stack bytes must be 0.." + STACK_MAX + ": " + stackBytes);
    }
    Pointer value = Bpf.allocate(8);
    value.putInt(0, stackBytes);
    value.putInt(4, follow ? 1 : 0);
    update(targetsFd, tgidKey(tgid), value, "adding target " + tgid);
  }

  /** Stops capturing {@code tgid} and drops its plans (a later process may reuse the id). */
  public synchronized void removeTarget(int tgid) {
    delete(targetsFd, tgidKey(tgid), "removing target " + tgid);
    clearPlans(tgid);
  }

  /**
   * Installs plan {@code index} of {@code tgid}: the {@value #PLAN_BYTES} bytes of a
   * {@code struct plan}. The program runs plans 0, 1, ... and stops at the first missing one.
   */
  public synchronized void setPlan(int tgid, int index, byte[] encodedPlan) {
    if (encodedPlan.length != PLAN_BYTES) {
      throw new IllegalArgumentException("a plan is " + PLAN_BYTES + " bytes, not "
          + encodedPlan.length);
    }
    Pointer value = Bpf.allocate(PLAN_BYTES);
    value.put(0, encodedPlan, 0, PLAN_BYTES);
    update(plansFd, planKey(tgid, index), value, "setting plan " + index + " of " + tgid);
  }

  /** Removes every plan of {@code tgid}. */
  public synchronized void clearPlans(int tgid) {
    for (int i = 0; i < MAX_PLANS; i++) {
      delete(plansFd, planKey(tgid, i), "removing plan " + i + " of " + tgid);
    }
  }

  /**
   * Hands the records waiting in the ring to {@code sink}, each as a little-endian buffer that is
   * only valid during the call, and returns how many. When none are waiting it first waits up to
   * {@code timeoutMillis} (0: not at all): the kernel does not wake the reader per record (that
   * would cost the target's ticks), only when the ring is a quarter full, so callers poll on a
   * short timer (e.g. 10 ms) rather than wait forever. An exception thrown by the sink ends the
   * poll and is rethrown here.
   */
  public int poll(int timeoutMillis, Consumer<ByteBuffer> sink) {
    RingReader r;
    synchronized (this) {
      checkOpen();
      r = ring;
    }
    return r.poll(timeoutMillis, sink);
  }

  /** The kernel counters summed over CPUs, cumulative since open, by lower_snake name. */
  public synchronized Map<String, Long> counters() {
    checkOpen();
    Pointer key = Bpf.allocate(4);
    Pointer values = Bpf.allocate(8 * possibleCpus);
    Map<String, Long> out = new LinkedHashMap<>();
    for (Counter c : Counter.values()) {
      key.putInt(0, c.ordinal());
      int err = lib.bpf_map_lookup_elem(countersFd, key, values);
      if (err < 0) {
        throw new BpfException("reading counter " + c.key(), err);
      }
      long sum = 0;
      for (int cpu = 0; cpu < possibleCpus; cpu++) {
        sum += values.getLong(8L * cpu);
      }
      out.put(c.key(), sum);
    }
    return Collections.unmodifiableMap(out);
  }

  /** Run count and time of the program; zero while kernel.bpf_stats_enabled is 0. */
  public synchronized ProgramStats programStats() {
    checkOpen();
    Pointer info = Bpf.allocate(PROG_INFO_SIZE);
    info.setMemory(0, PROG_INFO_SIZE, (byte) 0);
    Pointer length = Bpf.allocate(4);
    length.putInt(0, PROG_INFO_SIZE);
    int err = lib.bpf_obj_get_info_by_fd(programFd, info, length);
    if (err < 0) {
      throw new BpfException("reading the program's info", err);
    }
    return new ProgramStats(info.getLong(PROG_INFO_RUN_CNT), info.getLong(PROG_INFO_RUN_TIME_NS));
  }

  /** Detaches from every CPU and frees the ring, maps and program. Idempotent. */
  @Override
  public void close() {
    synchronized (this) {
      if (closed) {
        return;
      }
      closed = true;
      // Events first: once they are gone the program never runs again and the ring is quiet.
      for (PerfEvent event : events) {
        try {
          event.close();
        } catch (SyscallException e) {
          // Nothing to do: the fd is gone either way.
        }
      }
      events.clear();
      if (allocations != null) {
        allocations.close();
      }
      for (int fd : links) {
        Native.libc().close(fd);
      }
      links.clear();
    }
    // Outside this lock: a poll in progress holds the ring's lock until its timeout.
    if (ring != null) {
      ring.close();
    }
    object.close();
  }

  private void checkOpen() {
    if (closed) {
      throw new IllegalStateException("tick capture is closed");
    }
  }

  private void update(int fd, Pointer key, Pointer value, String what) {
    checkOpen();
    int err = lib.bpf_map_update_elem(fd, key, value, BPF_ANY);
    if (err < 0) {
      throw new BpfException(what, err);
    }
  }

  private void delete(int fd, Pointer key, String what) {
    checkOpen();
    int err = lib.bpf_map_delete_elem(fd, key);
    if (err < 0 && -err != Errno.ENOENT) {
      throw new BpfException(what, err);
    }
  }

  private static Pointer tgidKey(int tgid) {
    Pointer key = Bpf.allocate(4);
    key.putInt(0, tgid);
    return key;
  }

  private static Pointer planKey(int tgid, int index) {
    if (index < 0 || index >= MAX_PLANS) {
      throw new IllegalArgumentException("plan index must be 0.." + (MAX_PLANS - 1) + ": " + index);
    }
    Pointer key = Bpf.allocate(8);
    key.putLong(0, Integer.toUnsignedLong(tgid) << 8 | index);
    return key;
  }

  private static byte[] objectBytes() throws BpfLoadException {
    return ObjectBytes.read(RESOURCE, OBJECT_PROPERTY);
  }

  /** CPUs in /sys/devices/system/cpu/online ("0-3,6"); an offline CPU has no events. */
  public static List<Integer> onlineCpus() throws BpfLoadException {
    String text;
    try {
      text = Files.readString(Path.of("/sys/devices/system/cpu/online")).strip();
    } catch (IOException e) {
      throw new BpfLoadException("reading /sys/devices/system/cpu/online failed: "
          + e.getMessage() + ": mount sysfs", e);
    }
    List<Integer> cpus = new ArrayList<>();
    for (String part : text.split(",")) {
      int dash = part.indexOf('-');
      int lo = Integer.parseInt(dash < 0 ? part : part.substring(0, dash));
      int hi = dash < 0 ? lo : Integer.parseInt(part.substring(dash + 1));
      for (int cpu = lo; cpu <= hi; cpu++) {
        cpus.add(cpu);
      }
    }
    return cpus;
  }
}
