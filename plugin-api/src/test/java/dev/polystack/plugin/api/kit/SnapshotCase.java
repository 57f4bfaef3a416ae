package dev.polystack.plugin.api.kit;

import dev.polystack.plugin.api.Mapping;
import dev.polystack.plugin.api.Register;
import dev.polystack.plugin.api.Registers;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.zip.GZIPInputStream;
import java.util.zip.ZipEntry;
import java.util.zip.ZipInputStream;

/**
 * One recorded case for the conformance kit: a {@code polystack snapshot} file (format version 1,
 * docs/snapshot-format.md) read without the host. Holds each thread's registers and recorded
 * memory, the process-level reads, the memory map, the module files that could be found (by
 * SHA-256, as {@code polystack analyze} finds them) and the live walk's text.
 */
public final class SnapshotCase {
  private static final long MAX_ENTRY = 256L << 20;

  /**
   * {@code threadPointer} null when unknown: snapshots written by a polystack before API 2.0 do
   * not record it.
   */
  record ThreadRecord(int tid, Registers registers, MemoryBlob memory, Long threadPointer) {}

  /** A module of the case; {@code bytes} is null when no copy with the recorded digest exists. */
  record Module(String path, String sha256, byte[] bytes) {}

  private final String name;
  private final int pid;
  private final List<ThreadRecord> threads;
  private final MemoryBlob processMemory;
  private final List<Mapping> mappings;
  private final List<Module> modules;
  private final String liveStacks;

  private SnapshotCase(String name, int pid, List<ThreadRecord> threads, MemoryBlob process,
      List<Mapping> mappings, List<Module> modules, String liveStacks) {
    this.name = name;
    this.pid = pid;
    this.threads = List.copyOf(threads);
    this.processMemory = process;
    this.mappings = List.copyOf(mappings);
    this.modules = List.copyOf(modules);
    this.liveStacks = liveStacks;
  }

  /**
   * Reads a snapshot; module files are looked up as embedded entries, then as {@code DIR/SHA256}
   * or {@code DIR/SHA256.gz} in each of {@code moduleDirs}, then at the recorded path, and used
   * only when size and SHA-256 match.
   *
   * @throws IOException when the file cannot be read or is not a version 1 snapshot
   */
  public static SnapshotCase read(Path file, List<Path> moduleDirs) throws IOException {
    Map<String, byte[]> entries = new HashMap<>();
    try (ZipInputStream zip = new ZipInputStream(Files.newInputStream(file))) {
      for (ZipEntry e; (e = zip.getNextEntry()) != null; ) {
        entries.put(e.getName(), bounded(zip, e.getName()));
      }
    }
    try {
      return parse(file.getFileName().toString().replaceFirst("\\.psnap$", ""), entries,
          moduleDirs);
    } catch (IllegalArgumentException | ClassCastException | NullPointerException e) {
      throw new IOException(file + ": not a valid polystack snapshot: " + e.getMessage(), e);
    }
  }

  @SuppressWarnings("unchecked")
  private static SnapshotCase parse(String name, Map<String, byte[]> entries,
      List<Path> moduleDirs) throws IOException {
    byte[] header = entries.get("snapshot.json");
    if (header == null) {
      throw new IllegalArgumentException("no snapshot.json");
    }
    Map<String, Object> h = (Map<String, Object>) Json.parse(
        new String(header, StandardCharsets.UTF_8));
    if (!"polystack-snapshot".equals(h.get("format")) || !Long.valueOf(1).equals(h.get("version"))) {
      throw new IllegalArgumentException("format " + h.get("format") + " version "
          + h.get("version") + "; the kit reads version 1");
    }
    MemoryBlob process = blob(entries, (String) h.get("process_memory"));
    List<ThreadRecord> threads = new ArrayList<>();
    for (Object o : (List<Object>) h.get("threads")) {
      Map<String, Object> t = (Map<String, Object>) o;
      Map<String, Object> regs = (Map<String, Object>) t.get("registers");
      long[] values = new long[Register.values().length];
      for (Register r : Register.values()) {
        values[r.ordinal()] = hex(regs.get(r.name().toLowerCase(Locale.ROOT)));
      }
      Object pointer = t.get("thread_pointer"); // recorded since polystack's API 2.0
      threads.add(new ThreadRecord(((Long) t.get("tid")).intValue(), Registers.of(values),
          blob(entries, (String) t.get("memory")), pointer == null ? null : hex(pointer)));
    }
    List<Mapping> mappings = new ArrayList<>();
    for (Object o : (List<Object>) h.get("mappings")) {
      Map<String, Object> m = (Map<String, Object>) o;
      String perms = (String) m.get("perms");
      mappings.add(new Mapping(hex(m.get("start")), hex(m.get("end")), hex(m.get("offset")),
          perms.charAt(0) == 'r', perms.charAt(1) == 'w', perms.charAt(2) == 'x', 0,
          (Long) m.get("inode"), (String) m.get("path"), Boolean.TRUE.equals(m.get("deleted"))));
    }
    List<Module> modules = new ArrayList<>();
    for (Object o : (List<Object>) h.get("modules")) {
      Map<String, Object> m = (Map<String, Object>) o;
      String sha = (String) m.get("sha256");
      long size = (Long) m.get("size");
      modules.add(new Module((String) m.get("path"), sha,
          findModule(entries, (String) m.get("embedded"), (String) m.get("path"), sha, size,
              moduleDirs)));
    }
    byte[] live = entries.get(String.valueOf(h.get("live_stacks")));
    return new SnapshotCase(name, ((Long) h.get("pid")).intValue(), threads, process, mappings,
        modules, live == null ? "" : new String(live, StandardCharsets.UTF_8));
  }

  private static byte[] findModule(Map<String, byte[]> entries, String embedded, String path,
      String sha, long size, List<Path> dirs) throws IOException {
    List<byte[]> candidates = new ArrayList<>();
    if (embedded != null && entries.containsKey(embedded)) {
      candidates.add(entries.get(embedded));
    }
    for (Path dir : dirs) {
      Path plain = dir.resolve(sha);
      Path gz = dir.resolve(sha + ".gz");
      if (Files.isRegularFile(plain)) {
        candidates.add(Files.readAllBytes(plain));
      } else if (Files.isRegularFile(gz)) {
        try (InputStream in = new GZIPInputStream(Files.newInputStream(gz))) {
          candidates.add(bounded(in, gz.toString()));
        }
      }
    }
    Path recorded = Path.of(path);
    if (path.startsWith("/") && Files.isRegularFile(recorded) && Files.size(recorded) == size) {
      candidates.add(Files.readAllBytes(recorded));
    }
    for (byte[] c : candidates) {
      if (c.length == size && sha256(c).equals(sha)) {
        return c;
      }
    }
    return null;
  }

  private static MemoryBlob blob(Map<String, byte[]> entries, String entry) {
    byte[] data = entries.get(entry);
    if (data == null) {
      throw new IllegalArgumentException("missing entry " + entry);
    }
    return MemoryBlob.parse(data, entry);
  }

  private static long hex(Object value) {
    String s = (String) value;
    if (!s.startsWith("0x")) {
      throw new IllegalArgumentException("expected a hex string, got " + s);
    }
    return Long.parseUnsignedLong(s.substring(2), 16);
  }

  private static byte[] bounded(InputStream in, String what) throws IOException {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    byte[] buf = new byte[65536];
    for (int n; (n = in.read(buf)) > 0; ) {
      out.write(buf, 0, n);
      if (out.size() > MAX_ENTRY) {
        throw new IOException(what + ": larger than " + (MAX_ENTRY >> 20) + " MiB");
      }
    }
    return out.toByteArray();
  }

  static String sha256(byte[] data) {
    try {
      return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(data));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("the JDK lacks SHA-256", e);
    }
  }

  /** The file name without {@code .psnap}. */
  public String name() {
    return name;
  }

  public int pid() {
    return pid;
  }

  /** The stacks the live walk printed when the case was recorded. */
  public String liveStacks() {
    return liveStacks;
  }

  List<ThreadRecord> threads() {
    return threads;
  }

  MemoryBlob processMemory() {
    return processMemory;
  }

  /** Every recorded blob: the process's, then each thread's. */
  List<MemoryBlob> allMemory() {
    List<MemoryBlob> all = new ArrayList<>();
    all.add(processMemory);
    threads.forEach(t -> all.add(t.memory()));
    return all;
  }

  List<Mapping> mappings() {
    return mappings;
  }

  List<Module> modules() {
    return modules;
  }

  /** The same case without the live text, for plug-ins whose frame names it cannot show. */
  public SnapshotCase withoutLiveStacks() {
    return new SnapshotCase(name, pid, threads, processMemory, mappings, modules, "");
  }

  /**
   * The same case with the threads' thread pointers (x86-64: FS base, by tid), which snapshots
   * written by a polystack before API 2.0 do not record: for plans that start from {@code
   * threadPointer}, taken from the live threads when the case was recorded (gdb: {@code info
   * registers fs_base}). Threads not named keep what they had.
   */
  public SnapshotCase withThreadPointers(Map<Integer, Long> byTid) {
    List<ThreadRecord> out = new ArrayList<>();
    for (ThreadRecord t : threads) {
      Long tp = byTid.get(t.tid());
      out.add(tp == null ? t : new ThreadRecord(t.tid(), t.registers(), t.memory(), tp));
    }
    return new SnapshotCase(name, pid, out, processMemory, mappings, modules, liveStacks);
  }

  @Override
  public String toString() {
    return name;
  }
}
