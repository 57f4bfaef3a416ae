package dev.polystack.host.proc;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * {@code /proc/PID/status} (or a thread's) as a key/value map, with typed getters for the fields
 * the host relies on. Those fields are validated at parse time, so the getters cannot fail.
 */
public final class ProcessStatus {
  static final String WHAT = "status";
  private static final int MAX_FIELDS = 512;

  /** The four ids on the Uid/Gid lines. */
  public record IdSet(long real, long effective, long savedSet, long filesystem) {}

  private final Map<String, String> fields;
  private final String name;
  private final ThreadState state;
  private final int tgid;
  private final int pid;
  private final int ppid;
  private final int tracerPid;
  private final IdSet uid;
  private final List<Integer> nsPids;

  private ProcessStatus(Map<String, String> fields, Path file) throws ProcReadException {
    this.fields = Collections.unmodifiableMap(new LinkedHashMap<>(fields));
    this.name = required("Name", file);
    String stateText = required("State", file);
    this.state =
        stateText.isEmpty() ? null : ThreadState.fromCode(stateText.charAt(0)).orElse(null);
    if (state == null) {
      throw ProcReadException.malformed(WHAT, file, "bad State '" + stateText + "'");
    }
    this.tgid = positiveInt("Tgid", required("Tgid", file), file);
    this.pid = positiveInt("Pid", required("Pid", file), file);
    this.ppid = nonNegativeInt("PPid", required("PPid", file), file);
    this.tracerPid = nonNegativeInt("TracerPid", required("TracerPid", file), file);
    String[] ids = required("Uid", file).split("\\s+");
    if (ids.length != 4) {
      throw ProcReadException.malformed(WHAT, file, "Uid must have 4 values");
    }
    this.uid = new IdSet(id(ids[0], file), id(ids[1], file), id(ids[2], file), id(ids[3], file));
    // NSpid exists since Linux 4.1; absent means "no namespace information", not an error.
    String ns = fields.get("NSpid");
    List<Integer> parsed = new ArrayList<>();
    if (ns != null) {
      for (String s : ns.split("\\s+")) {
        parsed.add(positiveInt("NSpid", s, file));
      }
    }
    this.nsPids = List.copyOf(parsed);
  }

  static ProcessStatus parse(byte[] data, Path file) throws ProcReadException {
    String text = new String(data, StandardCharsets.UTF_8);
    if (text.isEmpty()) {
      throw ProcReadException.malformed(WHAT, file, "empty");
    }
    if (!text.endsWith("\n")) {
      throw ProcReadException.malformed(WHAT, file, "truncated (no trailing newline)");
    }
    Map<String, String> fields = new LinkedHashMap<>();
    String[] lines = text.split("\n");
    if (lines.length > MAX_FIELDS) {
      throw ProcReadException.malformed(WHAT, file, "more than " + MAX_FIELDS + " lines");
    }
    for (int i = 0; i < lines.length; i++) {
      String line = lines[i];
      int colon = line.indexOf(':');
      if (colon <= 0) {
        throw ProcReadException.malformed(WHAT, file, i + 1, "no 'Key:' prefix");
      }
      String key = line.substring(0, colon);
      if (fields.putIfAbsent(key, line.substring(colon + 1).strip()) != null) {
        throw ProcReadException.malformed(WHAT, file, i + 1, "duplicate key " + key);
      }
    }
    return new ProcessStatus(fields, file);
  }

  /** All fields, in file order, values with surrounding whitespace removed. */
  public Map<String, String> fields() {
    return fields;
  }

  public Optional<String> get(String key) {
    return Optional.ofNullable(fields.get(Objects.requireNonNull(key, "key")));
  }

  /** Name as printed in status (escaped by the kernel, unlike stat's comm). */
  public String name() {
    return name;
  }

  public ThreadState state() {
    return state;
  }

  public int tgid() {
    return tgid;
  }

  public int pid() {
    return pid;
  }

  public int ppid() {
    return ppid;
  }

  /** Pid of the tracer, 0 if not being traced. */
  public int tracerPid() {
    return tracerPid;
  }

  public boolean isTraced() {
    return tracerPid != 0;
  }

  public IdSet uid() {
    return uid;
  }

  /**
   * Pid in each pid namespace, outermost (that of the procfs mount) first; empty on kernels
   * before 4.1.
   */
  public List<Integer> nsPids() {
    return nsPids;
  }

  private String required(String key, Path file) throws ProcReadException {
    String v = fields.get(key);
    if (v == null) {
      throw ProcReadException.malformed(WHAT, file, "missing field " + key);
    }
    return v;
  }

  private static int positiveInt(String key, String value, Path file) throws ProcReadException {
    int v = nonNegativeInt(key, value, file);
    if (v == 0) {
      throw ProcReadException.malformed(WHAT, file, key + " must be positive");
    }
    return v;
  }

  private static int nonNegativeInt(String key, String value, Path file)
      throws ProcReadException {
    if (!isSmallDecimal(value)) {
      throw ProcReadException.malformed(WHAT, file, "bad " + key + " '" + value + "'");
    }
    long v = Long.parseLong(value);
    if (v > Integer.MAX_VALUE) {
      throw ProcReadException.malformed(WHAT, file, key + " out of range");
    }
    return (int) v;
  }

  private static long id(String value, Path file) throws ProcReadException {
    if (!isSmallDecimal(value)) {
      throw ProcReadException.malformed(WHAT, file, "bad Uid '" + value + "'");
    }
    long v = Long.parseLong(value);
    if (v > 0xffffffffL) {
      throw ProcReadException.malformed(WHAT, file, "Uid out of range");
    }
    return v;
  }

  /** ASCII digits only (Long.parseLong would also accept other scripts' digits and a sign). */
  private static boolean isSmallDecimal(String value) {
    return !value.isEmpty()
        && value.length() <= 10
        && value.chars().allMatch(c -> c >= '0' && c <= '9');
  }

  @Override
  public String toString() {
    return "ProcessStatus{pid=" + pid + ", name=" + name + ", state=" + state + "}";
  }
}
