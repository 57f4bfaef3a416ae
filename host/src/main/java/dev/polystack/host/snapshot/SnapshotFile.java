package dev.polystack.host.snapshot;

import dev.polystack.host.proc.DeviceNumber;
import dev.polystack.host.proc.MemoryMapping;
import dev.polystack.host.proc.Permissions;
import dev.polystack.plugin.api.Register;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.NavigableMap;
import java.util.TreeMap;
import java.util.zip.ZipEntry;
import java.util.zip.ZipInputStream;
import java.util.zip.ZipOutputStream;

/**
 * Reads and writes the snapshot file: a zip with {@code snapshot.json} (the header), one binary
 * memory blob per thread plus one for process-level reads, embedded module files, and the live
 * stacks as text. Layout and field meanings: docs/snapshot-format.md.
 */
public final class SnapshotFile {
  static final String HEADER = "snapshot.json";
  static final String FORMAT = "polystack-snapshot";
  static final int MEMORY_MAGIC = 0x50534d31; // "PSM1"

  /**
   * Bounds on what a reader accepts from a file that may be corrupt or hostile: a few hundred
   * bytes of zip can claim gigabytes, and every entry is held in memory while the header is
   * parsed. The total bounds that memory whatever the per-entry and count caps allow (100,000
   * entries of 256 MiB); the writer refuses to exceed it, so every snapshot polystack writes
   * can be read back (docs/snapshot-format.md, "Limits").
   */
  static final long MAX_ENTRY = 256L << 20;
  static final int MAX_ENTRIES = 100_000;
  static final long MAX_TOTAL = 512L << 20;

  private SnapshotFile() {}

  /**
   * Writes {@code s} as a zip into {@code target} (not closed; the caller owns the file, see
   * {@code host.output.OutputFile} for how files are created).
   *
   * @throws SnapshotException if the entries would decompress to more than a reader accepts
   */
  public static void write(Snapshot s, OutputStream target) throws IOException,
      SnapshotException {
    long total = (long) s.processMemory().size()
        + s.threads().stream().mapToLong(t -> t.memory().size()).sum()
        + s.modules().stream().filter(Snapshot.ModuleRef::embedded)
            .mapToLong(m -> m.bytes().length).sum();
    if (total > MAX_TOTAL) {
      throw new SnapshotException("the snapshot would hold " + (total >> 20) + " MiB of memory"
          + " and modules, more than the " + (MAX_TOTAL >> 20) + " MiB a reader accepts; embed"
          + " fewer modules (--embed-modules needed, or none with --module-store DIR)");
    }
    ZipOutputStream zip = new ZipOutputStream(target);
    zip.setLevel(9);
    StringBuilder h = new StringBuilder();
    h.append("{\n\"format\":\"").append(FORMAT).append("\",\n\"version\":").append(Snapshot.VERSION)
        .append(",\n\"pid\":").append(s.pid()).append(",\n\"max_depth\":").append(s.maxDepth())
        .append(",\n\"process_memory\":\"memory/process.bin\",\n\"threads\":[");
    for (int i = 0; i < s.threads().size(); i++) {
      Snapshot.ThreadRecord t = s.threads().get(i);
      h.append(i == 0 ? "\n" : ",\n").append("{\"tid\":").append(t.tid()).append(",\"name\":")
          .append(quote(t.name())).append(",\"state\":").append(quote(t.state()))
          .append(",\"memory\":\"memory/thread-").append(t.tid()).append(".bin\",\"registers\":{");
      for (Register r : Register.values()) {
        h.append(r.ordinal() == 0 ? "" : ",").append('"')
            .append(r.name().toLowerCase(Locale.ROOT)).append("\":\"")
            .append(hex(t.registers()[r.ordinal()])).append('"');
      }
      h.append('}');
      if (t.threadPointer() != 0) {
        h.append(",\"thread_pointer\":\"").append(hex(t.threadPointer())).append('"');
      }
      h.append('}');
    }
    h.append("],\n\"mappings\":[");
    for (int i = 0; i < s.mappings().size(); i++) {
      MemoryMapping m = s.mappings().get(i);
      h.append(i == 0 ? "\n" : ",\n").append("{\"start\":\"").append(hex(m.start()))
          .append("\",\"end\":\"").append(hex(m.end())).append("\",\"offset\":\"")
          .append(hex(m.offset())).append("\",\"perms\":\"").append(m.permissions().raw())
          .append("\",\"dev\":\"").append(m.device()).append("\",\"inode\":")
          .append(Long.toUnsignedString(m.inode())).append(",\"path\":").append(quote(m.path()))
          .append(",\"deleted\":").append(m.deleted()).append('}');
    }
    h.append("],\n\"modules\":[");
    for (int i = 0; i < s.modules().size(); i++) {
      Snapshot.ModuleRef m = s.modules().get(i);
      h.append(i == 0 ? "\n" : ",\n").append("{\"path\":").append(quote(m.path()))
          .append(",\"build_id\":").append(quote(m.buildId())).append(",\"size\":")
          .append(m.size()).append(",\"sha256\":\"").append(m.sha256()).append("\",\"needed\":")
          .append(m.needed()).append(",\"embedded\":")
          .append(m.embedded() ? "\"modules/" + m.sha256() + "\"" : "null").append('}');
    }
    h.append("],\n\"losses\":{");
    int k = 0;
    for (var e : new TreeMap<>(s.losses()).entrySet()) {
      h.append(k++ == 0 ? "" : ",").append(quote(e.getKey())).append(':').append(e.getValue());
    }
    h.append("},\n\"live_stacks\":\"live-stacks.txt\"\n}\n");
    put(zip, HEADER, h.toString().getBytes(StandardCharsets.UTF_8));
    put(zip, "memory/process.bin", encode(s.processMemory()));
    for (Snapshot.ThreadRecord t : s.threads()) {
      put(zip, "memory/thread-" + t.tid() + ".bin", encode(t.memory()));
    }
    for (Snapshot.ModuleRef m : s.modules()) {
      if (m.embedded()) {
        put(zip, "modules/" + m.sha256(), m.bytes());
      }
    }
    put(zip, "live-stacks.txt", s.liveStacks().getBytes(StandardCharsets.UTF_8));
    zip.finish();
  }

  private static void put(ZipOutputStream zip, String name, byte[] bytes) throws IOException {
    ZipEntry e = new ZipEntry(name);
    e.setTime(0); // reproducible files: same walk, same bytes
    zip.putNextEntry(e);
    zip.write(bytes);
    zip.closeEntry();
  }

  /** Memory blob: magic, ranges (address, length, bytes), then reads (address, length, got). */
  static byte[] encode(MemoryImage image) throws IOException {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    DataOutputStream out = new DataOutputStream(bytes);
    out.writeInt(MEMORY_MAGIC);
    out.writeInt(image.ranges().size());
    for (var e : image.ranges().entrySet()) {
      out.writeLong(e.getKey());
      out.writeInt(e.getValue().length);
      out.write(e.getValue());
    }
    out.writeInt(image.reads().size());
    for (MemoryImage.Read r : image.reads()) {
      out.writeLong(r.address());
      out.writeInt(r.length());
      out.writeInt(r.got());
    }
    out.flush();
    return bytes.toByteArray();
  }

  static MemoryImage decode(byte[] blob, String name) throws SnapshotException {
    try (DataInputStream in = new DataInputStream(new java.io.ByteArrayInputStream(blob))) {
      if (in.readInt() != MEMORY_MAGIC) {
        throw new SnapshotException(name + ": not a polystack memory blob");
      }
      NavigableMap<Long, byte[]> ranges = new TreeMap<>(Long::compareUnsigned);
      int count = count(in.readInt(), name);
      long previousEnd = 0;
      for (int i = 0; i < count; i++) {
        long at = in.readLong();
        int len = in.readInt();
        if (len <= 0 || len > in.available() || (i > 0
            && Long.compareUnsigned(at, previousEnd) <= 0)) {
          throw new SnapshotException(name + ": range " + i + " is malformed");
        }
        byte[] b = new byte[len];
        in.readFully(b);
        ranges.put(at, b);
        previousEnd = at + len;
      }
      List<MemoryImage.Read> reads = new ArrayList<>();
      count = count(in.readInt(), name);
      for (int i = 0; i < count; i++) {
        reads.add(new MemoryImage.Read(in.readLong(), in.readInt(), in.readInt()));
      }
      return new MemoryImage(ranges, reads);
    } catch (IOException e) {
      throw new SnapshotException(name + ": truncated memory blob");
    }
  }

  private static int count(int n, String name) throws SnapshotException {
    if (n < 0 || n > 10_000_000) {
      throw new SnapshotException(name + ": bad count " + n);
    }
    return n;
  }

  public static Snapshot read(Path file) throws SnapshotException {
    Map<String, byte[]> entries = new HashMap<>();
    try (ZipInputStream zip = new ZipInputStream(Files.newInputStream(file))) {
      ZipEntry e;
      long total = 0;
      while ((e = zip.getNextEntry()) != null) {
        if (entries.size() >= MAX_ENTRIES) {
          throw new SnapshotException(file + ": too many entries");
        }
        byte[] bytes = readBounded(zip, file + "!" + e.getName(), MAX_TOTAL - total);
        total += bytes.length;
        entries.put(e.getName(), bytes);
      }
    } catch (TotalExceeded e) {
      throw new SnapshotException(file + ": decompresses to more than " + (MAX_TOTAL >> 20)
          + " MiB, more than any snapshot polystack writes; not read (a damaged or hostile"
          + " file)");
    } catch (IOException e) {
      throw new SnapshotException(file + ": not a readable snapshot (" + e.getMessage() + ")", e);
    }
    byte[] header = entries.get(HEADER);
    if (header == null) {
      throw new SnapshotException(file + ": not a polystack snapshot (no " + HEADER + ")");
    }
    try {
      return parse(new String(header, StandardCharsets.UTF_8), entries, file);
    } catch (IllegalArgumentException | ClassCastException | NullPointerException e) {
      throw new SnapshotException(file + ": malformed " + HEADER + " (" + e.getMessage() + ")");
    }
  }

  /** Reads one entry, at most {@link #MAX_ENTRY} bytes and at most {@code left} in all. */
  private static byte[] readBounded(InputStream in, String name, long left) throws IOException,
      SnapshotException, TotalExceeded {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    byte[] buf = new byte[1 << 16];
    int n;
    while ((n = in.read(buf)) > 0) {
      if (out.size() + (long) n > MAX_ENTRY) {
        throw new SnapshotException(name + ": entry larger than " + MAX_ENTRY + " bytes");
      }
      if (out.size() + (long) n > left) {
        throw new TotalExceeded();
      }
      out.write(buf, 0, n);
    }
    return out.toByteArray();
  }

  /** The entries together exceed {@link #MAX_TOTAL}; reported once, with the file's name. */
  private static final class TotalExceeded extends Exception {
    private static final long serialVersionUID = 1L;

    TotalExceeded() {
      super(null, null, false, false);
    }
  }

  @SuppressWarnings("unchecked")
  private static Snapshot parse(String text, Map<String, byte[]> entries, Path file)
      throws SnapshotException {
    Map<String, Object> h = (Map<String, Object>) JsonReader.parse(text);
    if (!FORMAT.equals(h.get("format"))) {
      throw new SnapshotException(file + ": not a polystack snapshot");
    }
    long version = (Long) h.get("version");
    if (version != Snapshot.VERSION) {
      throw new SnapshotException(file + ": snapshot format version " + version
          + ", this polystack reads version " + Snapshot.VERSION + "; use a matching polystack");
    }
    List<Snapshot.ThreadRecord> threads = new ArrayList<>();
    for (Object o : (List<Object>) h.get("threads")) {
      Map<String, Object> t = (Map<String, Object>) o;
      Map<String, Object> regs = (Map<String, Object>) t.get("registers");
      long[] values = new long[Register.values().length];
      for (Register r : Register.values()) {
        values[r.ordinal()] = unhex((String) regs.get(r.name().toLowerCase(Locale.ROOT)));
      }
      String blob = (String) t.get("memory");
      Object pointer = t.get("thread_pointer"); // absent in snapshots written before it
      threads.add(new Snapshot.ThreadRecord(((Long) t.get("tid")).intValue(),
          (String) t.get("name"), (String) t.get("state"), values,
          decode(entry(entries, blob, file), blob),
          pointer instanceof String p ? unhex(p) : 0));
    }
    List<MemoryMapping> mappings = new ArrayList<>();
    for (Object o : (List<Object>) h.get("mappings")) {
      Map<String, Object> m = (Map<String, Object>) o;
      String perms = (String) m.get("perms");
      String[] dev = ((String) m.get("dev")).split(":");
      mappings.add(new MemoryMapping(unhex((String) m.get("start")), unhex((String) m.get("end")),
          new Permissions(perms, perms.charAt(0) == 'r', perms.charAt(1) == 'w',
              perms.charAt(2) == 'x', perms.charAt(3) == 's'),
          unhex((String) m.get("offset")),
          new DeviceNumber(Integer.parseInt(dev[0], 16), Integer.parseInt(dev[1], 16)),
          (Long) m.get("inode"), (String) m.get("path"), (Boolean) m.get("deleted")));
    }
    List<Snapshot.ModuleRef> modules = new ArrayList<>();
    for (Object o : (List<Object>) h.get("modules")) {
      Map<String, Object> m = (Map<String, Object>) o;
      String embedded = (String) m.get("embedded");
      modules.add(new Snapshot.ModuleRef((String) m.get("path"), (String) m.get("build_id"),
          (Long) m.get("size"), (String) m.get("sha256"), (Boolean) m.get("needed"),
          embedded == null ? null : entry(entries, embedded, file)));
    }
    Map<String, Long> losses = new LinkedHashMap<>();
    ((Map<String, Object>) h.get("losses")).forEach((k, v) -> losses.put(k, (Long) v));
    byte[] live = entries.get("live-stacks.txt");
    String process = (String) h.get("process_memory");
    return new Snapshot(((Long) h.get("pid")).intValue(), ((Long) h.get("max_depth")).intValue(),
        threads, mappings, modules, decode(entry(entries, process, file), process),
        live == null ? "" : new String(live, StandardCharsets.UTF_8), losses);
  }

  private static byte[] entry(Map<String, byte[]> entries, String name, Path file)
      throws SnapshotException {
    byte[] b = entries.get(name);
    if (b == null) {
      throw new SnapshotException(file + ": entry " + name + " is missing");
    }
    return b;
  }

  static String hex(long v) {
    return "0x" + Long.toHexString(v);
  }

  static long unhex(String s) {
    if (s == null || !s.startsWith("0x")) {
      throw new IllegalArgumentException("expected a 0x hex number, got " + s);
    }
    return Long.parseUnsignedLong(s.substring(2), 16);
  }

  static String quote(String s) {
    StringBuilder sb = new StringBuilder(s.length() + 2).append('"');
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c == '"' || c == '\\') {
        sb.append('\\').append(c);
      } else if (c < 0x20) {
        sb.append(String.format("\\u%04x", (int) c));
      } else {
        sb.append(c);
      }
    }
    return sb.append('"').toString();
  }
}
