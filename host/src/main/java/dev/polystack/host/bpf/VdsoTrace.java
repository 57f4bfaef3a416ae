package dev.polystack.host.bpf;

import dev.polystack.host.perf.PerfEvent;
import dev.polystack.host.sys.Native;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import java.util.function.IntPredicate;
import jnr.ffi.Pointer;

/**
 * The vDSO tracer's BPF program (vdso_trace.bpf.c) and its maps: the breakpoint handler that
 * pairs entry and return in the kernel and emits complete calls into a ring buffer. The probe
 * backend opens the breakpoints and attaches them here; this class knows the program's layouts
 * and nothing of the vDSO (sites and copies come from the plug-in's plan).
 */
public final class VdsoTrace implements AutoCloseable {
  /** Size of a {@code struct call} record. */
  public static final int RECORD_BYTES = 248;
  public static final int MAX_COPIES = 2;
  public static final int COPY_MAX = 64;
  public static final int ARGS = 6;
  /** Kinds of {@code struct site}. */
  public static final int KIND_ENTRY = 1;
  public static final int KIND_RETURN = 2;
  /** A call whose return address could not be read at entry. */
  public static final int FLAG_RETURN_ADDRESS_UNREADABLE = 1;

  static final String OBJECT_PROPERTY = "polystack.bpf.vdso.object";
  static final String RESOURCE = "/dev/polystack/host/bpf/vdso_trace.bpf.o";
  private static final String PROGRAM = "vdso_probe";
  private static final long IOC_SET_BPF = 0x40042408L;
  private static final long BPF_ANY = 0;
  private static final int SITE_BYTES = 24;
  private static final int PENDING_KEY_BYTES = 16;

  /** The counters map's indices (the C enum), as reported: lower_snake names. */
  private static final List<String> COUNTERS = List.of("entries", "returns", "records",
      "ring_full", "output_unreadable", "unpaired_return", "pending_full", "entry_replaced",
      "return_address_unreadable", "no_site", "sigtrap_delivered", "exec");
  private static final int EXEC = 11;
  private static final String EXEC_PROGRAM = "vdso_exec";
  private static final String SIGNAL_PROGRAM = "vdso_sigtrap";

  private final LibBpf lib = Bpf.lib();
  private final BpfObject object;
  private final int possibleCpus;
  private final int programFd;
  private final int sitesFd;
  private final int pendingFd;
  private final int countersFd;
  private final int targetsFd;
  private final RingReader ring;
  /** The raw tracepoints that count SIGTRAPs and execs, or -1 where the kernel refused them. */
  private final int signalLink;
  private final int execLink;
  private boolean closed;

  private VdsoTrace(BpfObject object, int possibleCpus) throws BpfLoadException {
    this.object = object;
    this.possibleCpus = possibleCpus;
    this.programFd = object.programFd(PROGRAM);
    this.sitesFd = object.mapFd("sites");
    this.pendingFd = object.mapFd("pending");
    this.countersFd = object.mapFd("counters");
    this.targetsFd = object.mapFd("targets");
    this.ring = RingReader.open(object.mapFd("events"));
    // Only a counter: a kernel without the tracepoint still traces, the summary then lacks it.
    this.signalLink = lib.bpf_raw_tracepoint_open("signal_generate",
        object.programFd(SIGNAL_PROGRAM));
    this.execLink = lib.bpf_raw_tracepoint_open("sched_process_exec",
        object.programFd(EXEC_PROGRAM));
  }

  /**
   * Loads the program. {@code ringBytes}: a power of two, at least a page; {@code pending}: how
   * many calls may be in flight at once (entries waiting for their return).
   */
  public static VdsoTrace open(int ringBytes, int pending) throws BpfLoadException {
    if (ringBytes < 4096 || Integer.bitCount(ringBytes) != 1) {
      throw new IllegalArgumentException("ring size must be a power of two >= 4096: " + ringBytes);
    }
    if (Bpf.loadFailure().isPresent()) {
      throw new BpfLoadException(Bpf.INSTALL_HINT);
    }
    BpfObject object = BpfObject.open(ObjectBytes.read(RESOURCE, OBJECT_PROPERTY),
        "vdso_trace.bpf.o");
    try {
      int cpus = Bpf.lib().libbpf_num_possible_cpus();
      if (cpus <= 0) {
        throw BpfLoadException.of("counting possible CPUs", cpus, "",
            "check /sys/devices/system/cpu/possible");
      }
      object.setMaxEntries("events", ringBytes);
      object.setMaxEntries("pending", pending);
      object.load(PROGRAM);
      return new VdsoTrace(object, cpus);
    } catch (BpfLoadException | RuntimeException e) {
      object.close();
      throw e;
    }
  }

  /** A copy at a return: {@code length} bytes from where argument {@code argument} pointed. */
  public record Copy(int argument, int length) {
    public Copy {
      if (argument < 0 || argument >= ARGS || length < 1 || length > COPY_MAX) {
        throw new IllegalArgumentException("copy of argument " + argument + ", " + length
            + " bytes");
      }
    }
  }

  /** Declares a breakpoint address: an entry, or a ret of the function entered at {@code entry}. */
  public synchronized void putSite(long address, int kind, long entry, List<Copy> copies) {
    if (copies.size() > MAX_COPIES) {
      throw new IllegalArgumentException("at most " + MAX_COPIES + " copies");
    }
    Pointer key = Bpf.allocate(8);
    key.putLong(0, address);
    Pointer v = Bpf.allocate(SITE_BYTES);
    v.setMemory(0, SITE_BYTES, (byte) 0);
    v.putInt(0, kind);
    v.putInt(4, copies.size());
    v.putLong(8, entry);
    for (int i = 0; i < copies.size(); i++) {
      v.putByte(16 + 4L * i, (byte) copies.get(i).argument());
      v.putShort(18 + 4L * i, (short) copies.get(i).length());
    }
    update(sitesFd, key, v, "declaring the probe site 0x" + Long.toHexString(address));
  }

  /** Counts the SIGTRAPs the kernel raises in process {@code tgid} (sigtrap_delivered). */
  public synchronized void watchSignals(int tgid) {
    Pointer key = Bpf.allocate(4);
    key.putInt(0, tgid);
    Pointer one = Bpf.allocate(1);
    one.putByte(0, (byte) 1);
    update(targetsFd, key, one, "watching the signals of " + tgid);
  }

  /** Makes the program the handler of a breakpoint event (before it is enabled). */
  public void attach(PerfEvent event) throws BpfLoadException {
    checkOpen();
    if (Native.libc().ioctl(event.fd(), IOC_SET_BPF, programFd) < 0) {
      throw BpfLoadException.of("attaching " + PROGRAM + " to a breakpoint", Native.errno(), "",
          "this kernel refuses BPF programs on breakpoint events");
    }
  }

  /** Hands complete calls (read-only, little-endian) to {@code sink}; see RingReader#poll. */
  public int poll(int timeoutMillis, Consumer<ByteBuffer> sink) {
    checkOpen();
    return ring.poll(timeoutMillis, sink);
  }

  /**
   * Removes the pending entries of threads {@code gone} says have gone, and returns how many:
   * calls that entered and will never return (the thread exited or was killed inside one).
   */
  public synchronized long dropPending(IntPredicate gone) {
    checkOpen();
    Pointer key = Bpf.allocate(PENDING_KEY_BYTES);
    Pointer next = Bpf.allocate(PENDING_KEY_BYTES);
    long dropped = 0;
    // Keys are collected before deleting: deleting the current key restarts get_next_key.
    List<byte[]> doomed = new ArrayList<>();
    Pointer cursor = null;
    for (int n = 0; n < 1 << 20; n++) {
      if (lib.bpf_map_get_next_key(pendingFd, cursor, next) < 0) {
        break;
      }
      if (gone.test(next.getInt(0))) {
        byte[] k = new byte[PENDING_KEY_BYTES];
        next.get(0, k, 0, k.length);
        doomed.add(k);
      }
      key.transferFrom(0, next, 0, PENDING_KEY_BYTES);
      cursor = key;
    }
    for (byte[] k : doomed) {
      key.put(0, k, 0, k.length);
      if (lib.bpf_map_delete_elem(pendingFd, key) == 0) {
        dropped++;
      }
    }
    return dropped;
  }

  /** Execs in watched processes since open; -1 where the kernel could not count them. */
  public synchronized long execs() {
    checkOpen();
    return execLink < 0 ? -1 : counter(EXEC);
  }

  private long counter(int index) {
    Pointer key = Bpf.allocate(4);
    Pointer values = Bpf.allocate(8 * possibleCpus);
    key.putInt(0, index);
    int err = lib.bpf_map_lookup_elem(countersFd, key, values);
    if (err < 0) {
      throw new BpfException("reading counter " + COUNTERS.get(index), err);
    }
    long sum = 0;
    for (int cpu = 0; cpu < possibleCpus; cpu++) {
      sum += values.getLong(8L * cpu);
    }
    return sum;
  }

  /** The kernel counters summed over CPUs, cumulative since open, by lower_snake name. */
  public synchronized Map<String, Long> counters() {
    checkOpen();
    Map<String, Long> out = new LinkedHashMap<>();
    for (int i = 0; i < COUNTERS.size(); i++) {
      out.put(COUNTERS.get(i), counter(i));
    }
    return out;
  }

  private void update(int fd, Pointer key, Pointer value, String what) {
    checkOpen();
    int err = lib.bpf_map_update_elem(fd, key, value, BPF_ANY);
    if (err < 0) {
      throw new BpfException(what, err);
    }
  }

  private void checkOpen() {
    if (closed) {
      throw new IllegalStateException("vdso trace is closed");
    }
  }

  /** Frees the ring, maps and program; the caller closes the breakpoint events first. */
  @Override
  public synchronized void close() {
    if (closed) {
      return;
    }
    closed = true;
    if (signalLink >= 0) {
      Native.libc().close(signalLink);
    }
    if (execLink >= 0) {
      Native.libc().close(execLink);
    }
    ring.close();
    object.close();
  }
}
