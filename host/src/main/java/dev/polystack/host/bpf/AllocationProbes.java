package dev.polystack.host.bpf;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import jnr.ffi.Pointer;

/**
 * The allocation program of the tick capture object (alloc_probe.h): its configuration maps and
 * its uprobe session links, one per probed file and process. Closed with the capture.
 */
public final class AllocationProbes {
  static final String PROGRAM = "alloc_probe";
  /** Sites (distinct probed functions) over every link. */
  public static final int MAX_SITES = 16;
  /** Entries of the exponential table (alloc_probe.h EXP_TABLE). */
  public static final int EXP_TABLE = 4096;
  /** Executable ranges per process for the stack digest. */
  public static final int TEXT_RANGES = 32;
  /** Probed allocator functions per process, for the internal-call filter. */
  public static final int ALLOCATOR_RANGES = 8;
  /** Modules whose own mmap calls are not counted, per process (alloc_probe.h). */
  public static final int MAPPER_RANGES = 4;
  /** sizeof(struct alloc_ranges). */
  private static final int RANGES_BYTES = 720;
  /** Padding of the range table: above every user address (alloc_probe.h). */
  static final long USER_TOP = 1L << 47;

  /** What a site's arguments mean (alloc_probe.h K_*). */
  public enum Kind {
    MALLOC(1), CALLOC(2), REALLOC(3), MEMALIGN(4), POSIX_MEMALIGN(5), FREE(6),
    /** A runtime's {@code lua_Alloc(ud, ptr, osize, nsize)}, named by its plug-in. */
    LUA_ALLOC(7),
    /** Any function whose calls are sampled ({@code record --event calls}): a call weighs 1. */
    CALL(8),
    /** The C library's {@code mmap} (anonymous mappings only) and {@code munmap}. */
    MMAP(9), MUNMAP(10);

    final int code;

    Kind(int code) {
      this.code = code;
    }

    /** alloc_probe.h's K_* value. */
    public int code() {
      return code;
    }

    /** The kind of a v3 record's code; null for an unknown one. */
    public static Kind of(int code) {
      for (Kind k : values()) {
        if (k.code == code) {
          return k;
        }
      }
      return null;
    }
  }

  private final LibBpf lib = Bpf.lib();
  private final int programFd;
  private final int sitesFd;
  private final int configFd;
  private final int tableFd;
  private final int rangesFd;
  private final List<UprobeLink> links = new ArrayList<>();

  AllocationProbes(BpfObject object, int cpus) throws BpfLoadException {
    this.programFd = object.programFd(PROGRAM);
    this.sitesFd = object.mapFd("alloc_sites");
    this.configFd = object.mapFd("alloc_config");
    this.tableFd = object.mapFd("exp_table");
    this.rangesFd = object.mapFd("alloc_ranges");
  }

  /**
   * Sets the sampling: one sample per {@code meanBytes} allocated on average, drawn from
   * {@code expTable} ({@value #EXP_TABLE} gaps of the inverse CDF); {@code meanBytes} 0 samples
   * every call. {@code stackBytes}: the stack copied at a sampled call.
   */
  public synchronized void configure(long meanBytes, int stackBytes, long[] expTable) {
    if (meanBytes < 0 || stackBytes < 0 || stackBytes > TickCapture.STACK_MAX) {
      throw new IllegalArgumentException("mean " + meanBytes + ", stack " + stackBytes);
    }
    if (expTable.length != EXP_TABLE) {
      throw new IllegalArgumentException("the table has " + EXP_TABLE + " entries");
    }
    Pointer key = Bpf.allocate(4);
    Pointer value = Bpf.allocate(8);
    for (int i = 0; i < EXP_TABLE; i++) {
      key.putInt(0, i);
      value.putLong(0, expTable[i]);
      update(tableFd, key, value, "writing the sampling table");
    }
    Pointer config = Bpf.allocate(16);
    config.putLong(0, meanBytes);
    config.putInt(8, stackBytes);
    config.putInt(12, 0);
    key.putInt(0, 0);
    update(configFd, key, config, "configuring allocation sampling");
  }

  /** Declares site {@code index} (the link cookie) as a function of {@code kind}. */
  public synchronized void setSite(int index, Kind kind) {
    if (index < 0 || index >= MAX_SITES) {
      throw new IllegalArgumentException("site index must be 0.." + (MAX_SITES - 1));
    }
    Pointer key = Bpf.allocate(4);
    key.putInt(0, index);
    Pointer value = Bpf.allocate(8);
    value.putInt(0, kind.code);
    value.putInt(4, 0);
    update(sitesFd, key, value, "declaring allocation site " + index);
  }

  /**
   * The runtime ranges of {@code tgid}: its executable mappings (at most {@value #TEXT_RANGES},
   * for the digest) and its probed allocator functions (at most {@value #ALLOCATOR_RANGES}),
   * each {@code [start, end)}.
   */
  public synchronized void setRanges(int tgid, List<long[]> text, List<long[]> allocator) {
    setRanges(tgid, text, allocator, List.of());
  }

  /**
   * {@link #setRanges(int, List, List)} with the modules whose own mmap calls serve an
   * allocator (at most {@value #MAPPER_RANGES}; more are left out, so their calls count).
   */
  public synchronized void setRanges(int tgid, List<long[]> text, List<long[]> allocator,
      List<long[]> mappers) {
    if (text.size() > TEXT_RANGES || allocator.size() > ALLOCATOR_RANGES) {
      throw new IllegalArgumentException(text.size() + " text ranges, " + allocator.size()
          + " allocator ranges");
    }
    List<long[]> sorted = new ArrayList<>(text);
    sorted.sort((a, b) -> Long.compareUnsigned(a[0], b[0]));
    Pointer value = Bpf.allocate(RANGES_BYTES);
    value.setMemory(0, RANGES_BYTES, (byte) 0);
    int m = Math.min(mappers.size(), MAPPER_RANGES);
    value.putInt(648, m);
    for (int i = 0; i < m; i++) {
      value.putLong(656 + 16L * i, mappers.get(i)[0]);
      value.putLong(664 + 16L * i, mappers.get(i)[1]);
    }
    value.putInt(0, sorted.size());
    value.putInt(4, allocator.size());
    for (int i = 0; i < TEXT_RANGES; i++) {
      long[] r = i < sorted.size() ? sorted.get(i) : new long[] {USER_TOP, USER_TOP};
      value.putLong(8 + 16L * i, r[0]);
      value.putLong(16 + 16L * i, r[1]);
    }
    for (int i = 0; i < allocator.size(); i++) {
      value.putLong(520 + 16L * i, allocator.get(i)[0]);
      value.putLong(528 + 16L * i, allocator.get(i)[1]);
    }
    Pointer key = Bpf.allocate(4);
    key.putInt(0, tgid);
    update(rangesFd, key, value, "setting the ranges of process " + tgid);
  }

  /** Probes {@code offsets} of {@code file} (cookie: site index) for process {@code pid}. */
  public synchronized UprobeLink attach(Path file, long[] offsets, long[] sites, int pid)
      throws BpfLoadException {
    UprobeLink link = UprobeLink.attach(programFd, file, offsets, sites, pid);
    links.add(link);
    return link;
  }

  /**
   * Removes the probes of one process before the capture closes (its exit, in the agent): the
   * link is closed and the ranges of {@code tgid} dropped. Idempotent.
   */
  public synchronized void release(int tgid, List<UprobeLink> probes) {
    for (UprobeLink l : probes) {
      l.close();
      links.remove(l);
    }
    Pointer key = Bpf.allocate(4);
    key.putInt(0, tgid);
    lib.bpf_map_delete_elem(rangesFd, key); // absent already: nothing to drop
  }

  /** Removes every probe (the kernel restores the target's code). Idempotent. */
  synchronized void close() {
    links.forEach(UprobeLink::close);
    links.clear();
  }

  private void update(int fd, Pointer key, Pointer value, String what) {
    int err = lib.bpf_map_update_elem(fd, key, value, 0);
    if (err < 0) {
      throw new BpfException(what, err);
    }
  }
}
