package dev.polystack.host.bpf;

import static java.nio.charset.StandardCharsets.US_ASCII;
import static java.nio.charset.StandardCharsets.UTF_8;

import dev.polystack.host.sys.Errno;
import dev.polystack.host.sys.TimerSignalsHeld;
import java.lang.ref.Reference;
import jnr.ffi.Pointer;

/** A libbpf {@code struct bpf_object}: opened from bytes, configured, loaded, closed once. */
final class BpfObject implements AutoCloseable {
  private static final int VERIFIER_LOG_BYTES = 1 << 20;
  private final LibBpf lib;
  private final String name;
  private final Pointer image;
  private Pointer object;

  private BpfObject(LibBpf lib, String name, Pointer image, Pointer object) {
    this.lib = lib;
    this.name = name;
    this.image = image;
    this.object = object;
  }

  static BpfObject open(byte[] elf, String name) throws BpfLoadException {
    LibBpf lib = Bpf.lib();
    // libbpf copies what it keeps during open, but the image is held anyway: it is small and
    // that stays safe should a libbpf version read it later.
    Pointer image = Bpf.allocate(Math.max(elf.length, 1));
    image.put(0, elf, 0, elf.length);
    // struct bpf_object_open_opts up to object_name: libbpf takes smaller (older) sizes. The
    // name replaces the buffer address libbpf would otherwise use in its messages.
    byte[] nameBytes = (name + "\0").getBytes(US_ASCII);
    Pointer cName = Bpf.allocate(nameBytes.length);
    cName.put(0, nameBytes, 0, nameBytes.length);
    Pointer opts = Bpf.allocate(16);
    opts.putLong(0, 16);
    opts.putPointer(8, cName);
    BpfLog.clear();
    Pointer object = lib.bpf_object__open_mem(image, elf.length, opts);
    Reference.reachabilityFence(cName);
    if (object == null) {
      throw BpfLoadException.of("opening the BPF object " + name, Bpf.errno(), BpfLog.reason(),
          "the object is damaged: reinstall polystack (or rebuild it with"
              + " host/src/main/bpf/build.sh)");
    }
    return new BpfObject(lib, name, image, object);
  }

  /** Whether {@link #load} loads {@code program}; only before it. */
  void setAutoload(String program, boolean autoload) throws BpfLoadException {
    int err = lib.bpf_program__set_autoload(program(program), autoload);
    if (err < 0) {
      throw BpfLoadException.of("configuring program " + program + " of " + name, err, "",
          "report this with the polystack version");
    }
  }

  /** The attach type the kernel checks {@code program} against at load; only before it. */
  void setExpectedAttachType(String program, int type) throws BpfLoadException {
    int err = lib.bpf_program__set_expected_attach_type(program(program), type);
    if (err < 0) {
      throw BpfLoadException.of("configuring program " + program + " of " + name, err, "",
          "report this with the polystack version");
    }
  }

  private Pointer program(String program) throws BpfLoadException {
    Pointer p = lib.bpf_object__find_program_by_name(object(), program);
    if (p == null) {
      throw missing("program " + program);
    }
    return p;
  }

  /** Sets a map's max_entries; only before {@link #load(String)}. */
  void setMaxEntries(String map, int entries) throws BpfLoadException {
    int err = lib.bpf_map__set_max_entries(map(map), entries);
    if (err < 0) {
      throw BpfLoadException.of("sizing map " + map + " of " + name + " to " + entries, err, "",
          "report this with the polystack version");
    }
  }

  /**
   * Loads maps and programs. A rejected program's verifier log goes to a buffer of ours rather
   * than through libbpf's print callback, whole: on 6.4+ kernels the log keeps its last bytes
   * when it overflows, and the last lines are the ones that say why.
   */
  void load(String program) throws BpfLoadException {
    Pointer log = Bpf.allocate(VERIFIER_LOG_BYTES);
    log.putByte(0, (byte) 0);
    Pointer prog = lib.bpf_object__find_program_by_name(object(), program);
    if (prog == null) {
      throw missing("program " + program);
    }
    lib.bpf_program__set_log_buf(prog, log, VERIFIER_LOG_BYTES);
    BpfLog.clear();
    int err;
    try (TimerSignalsHeld held = TimerSignalsHeld.hold()) {
      err = lib.bpf_object__load(object());
    }
    if (err < 0) {
      int e = -err;
      // An interrupted verifier's log stops at whatever instruction it had reached.
      String verifier = e == Errno.EAGAIN ? ""
          : verifierComplaint(log.getString(0, VERIFIER_LOG_BYTES, UTF_8));
      String advice;
      if (e == Errno.EAGAIN) {
        advice = "signals interrupted the verifier at each of libbpf's tries: try again, and"
            + " report it with what else runs in the JVM if it persists";
      } else if (!verifier.isEmpty()) {
        advice = "this kernel's verifier rejects the program: report it with `uname -r`";
      } else if (e == Errno.EPERM) {
        advice = "run polystack as root (or grant CAP_BPF and CAP_PERFMON)";
      } else if (e == Errno.ENOMEM || e == Errno.E2BIG) {
        advice = "the kernel refused the maps' memory: try a smaller ring buffer";
      } else {
        advice = "this kernel may lack a BPF feature polystack needs (ring buffers, bpf_loop,"
            + " BTF: Linux 5.17 or later)";
      }
      throw BpfLoadException.of("loading the BPF object " + name, err,
          verifier.isEmpty() ? BpfLog.reason() : "verifier: " + verifier, advice);
    }
  }

  /** The verifier's last line that is not a statistic: its reason for refusing. */
  static String verifierComplaint(String log) {
    String[] lines = log.split("\n");
    for (int i = lines.length - 1; i >= 0; i--) {
      String line = lines[i].strip();
      if (!line.isEmpty() && !line.startsWith("processed ") && !line.startsWith("verification time")
          && !line.startsWith("stack depth") && !line.startsWith(";")) {
        return line;
      }
    }
    return "";
  }

  int programFd(String program) throws BpfLoadException {
    Pointer p = lib.bpf_object__find_program_by_name(object(), program);
    if (p == null) {
      throw missing("program " + program);
    }
    return lib.bpf_program__fd(p);
  }

  int mapFd(String map) throws BpfLoadException {
    return lib.bpf_map__fd(map(map));
  }

  private Pointer map(String map) throws BpfLoadException {
    Pointer p = lib.bpf_object__find_map_by_name(object(), map);
    if (p == null) {
      throw missing("map " + map);
    }
    return p;
  }

  private BpfLoadException missing(String what) {
    return new BpfLoadException("the BPF object " + name + " has no " + what
        + ": it does not match this polystack; reinstall polystack");
  }

  private Pointer object() {
    if (object == null) {
      throw new IllegalStateException("BPF object " + name + " is closed");
    }
    return object;
  }

  /** Closes the object: its programs and maps go once nothing else (perf events) holds them. */
  @Override
  public void close() {
    if (object != null) {
      lib.bpf_object__close(object);
      object = null;
    }
    Reference.reachabilityFence(image);
  }
}
