package dev.polystack.vdso;

import dev.polystack.plugin.api.Bytes;
import dev.polystack.plugin.api.ProbeExit;
import dev.polystack.plugin.api.Register;
import dev.polystack.plugin.api.Registers;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Decoders of the vDSO's x86-64 exports; any other export gets the six argument registers. The
 * vDSO returns failures as the raw negative errno of its system-call fallback.
 */
final class Decoders {
  /** Functions with a dedicated decoder, in the order the default plan prefers them. */
  static final List<String> DECODED =
      List.of("clock_gettime", "gettimeofday", "time", "getcpu", "clock_getres", "getrandom");

  static final Register[] ARGUMENTS = {
    Register.RDI, Register.RSI, Register.RDX, Register.RCX, Register.R8, Register.R9
  };

  static final String[][] GRND = {{"1", "GRND_NONBLOCK"}, {"2", "GRND_RANDOM"},
      {"4", "GRND_INSECURE"}};
  private static final String[][] PROT = {{"1", "PROT_READ"}, {"2", "PROT_WRITE"},
      {"4", "PROT_EXEC"}};
  private static final String[][] MAP = {{"1", "MAP_SHARED"}, {"2", "MAP_PRIVATE"},
      {"8", "MAP_DROPPABLE"}, {"32", "MAP_ANONYMOUS"}, {"8192", "MAP_LOCKED"},
      {"16384", "MAP_NORESERVE"}, {"32768", "MAP_POPULATE"}};

  private Decoders() {}

  static boolean hasDecoder(String function) {
    return DECODED.contains(function);
  }

  static Decoder forFunction(String function) {
    return switch (function) {
      case "clock_gettime" -> new ClockDecoder("tp");
      case "clock_getres" -> new ClockDecoder("res");
      case "gettimeofday" -> new GettimeofdayDecoder();
      case "time" -> new TimeDecoder();
      case "getcpu" -> new GetcpuDecoder();
      case "getrandom" -> new GetrandomDecoder();
      default -> new GenericDecoder();
    };
  }

  static String hex(long value) {
    return "0x" + Long.toHexString(value);
  }

  static String flags(long value, String[][] names) {
    if (value == 0) {
      return "0";
    }
    StringBuilder sb = new StringBuilder();
    long rest = value;
    for (String[] n : names) {
      long bit = Long.parseLong(n[0]);
      if ((rest & bit) != 0) {
        sb.append(sb.length() > 0 ? "|" : "").append(n[1]);
        rest &= ~bit;
      }
    }
    if (rest != 0) {
      sb.append(sb.length() > 0 ? "|" : "").append(hex(rest));
    }
    return sb.toString();
  }

  private static long arg(Registers r, int i) {
    return r.get(ARGUMENTS[i]);
  }

  /** Arguments in declaration order (name i is argument register i), each in hex. */
  private static Map<String, Object> hexArguments(Registers entry, String... names) {
    Map<String, Object> m = new LinkedHashMap<>();
    for (int i = 0; i < names.length; i++) {
      m.put(names[i], hex(arg(entry, i)));
    }
    return m;
  }

  /** struct timespec / timeval: two signed 64-bit fields. */
  private static Map<String, Object> pair(byte[] b, String first, String second) {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put(first, Bytes.getLong(b, 0));
    m.put(second, Bytes.getLong(b, 8));
    return m;
  }

  /** clock_gettime(clockid_t, struct timespec *) and clock_getres, same shape. */
  record ClockDecoder(String pointerName) implements Decoder {
    @Override
    public List<ProbeExit.OutputCopy> copies() {
      return List.of(new ProbeExit.OutputCopy(Register.RSI, 16));
    }

    @Override
    public Map<String, Object> arguments(Registers entry) {
      int id = (int) arg(entry, 0);
      Map<String, Object> m = new LinkedHashMap<>();
      m.put("clockid", id);
      m.put("clock", ClockIds.name(id));
      m.put(pointerName, hex(arg(entry, 1)));
      return m;
    }

    @Override
    public long result(long rax) {
      return (int) rax;
    }

    @Override
    public Map<String, Object> outputs(Registers entry, long result, OutputReader memory) {
      Map<String, Object> m = new LinkedHashMap<>();
      long p = arg(entry, 1);
      if (result != 0) {
        return m;
      }
      if (p == 0) {
        m.put(pointerName, null);
        return m;
      }
      byte[] b = memory.read(p, 16);
      if (b == null) {
        return null;
      }
      m.put(pointerName, pair(b, "tv_sec", "tv_nsec"));
      return m;
    }
  }

  /** gettimeofday(struct timeval *, struct timezone *). */
  static final class GettimeofdayDecoder implements Decoder {
    @Override
    public List<ProbeExit.OutputCopy> copies() {
      return List.of(new ProbeExit.OutputCopy(Register.RDI, 16),
          new ProbeExit.OutputCopy(Register.RSI, 8));
    }

    @Override
    public Map<String, Object> arguments(Registers entry) {
      return hexArguments(entry, "tv", "tz");
    }

    @Override
    public long result(long rax) {
      return (int) rax;
    }

    @Override
    public Map<String, Object> outputs(Registers entry, long result, OutputReader memory) {
      Map<String, Object> m = new LinkedHashMap<>();
      if (result != 0) {
        return m;
      }
      long tv = arg(entry, 0);
      long tz = arg(entry, 1);
      if (tv != 0) {
        byte[] b = memory.read(tv, 16);
        if (b == null) {
          return null;
        }
        m.put("tv", pair(b, "tv_sec", "tv_usec"));
      }
      if (tz != 0) {
        byte[] b = memory.read(tz, 8);
        if (b == null) {
          return null;
        }
        Map<String, Object> zone = new LinkedHashMap<>();
        zone.put("tz_minuteswest", Bytes.getInt(b, 0));
        zone.put("tz_dsttime", Bytes.getInt(b, 4));
        m.put("tz", zone);
      }
      return m;
    }
  }

  /** time_t time(time_t *tloc): the result is the time; it never fails. */
  static final class TimeDecoder implements Decoder {
    @Override
    public List<ProbeExit.OutputCopy> copies() {
      return List.of(new ProbeExit.OutputCopy(Register.RDI, 8));
    }

    @Override
    public Map<String, Object> arguments(Registers entry) {
      return hexArguments(entry, "tloc");
    }

    @Override
    public long result(long rax) {
      return rax;
    }

    @Override
    public String errno(long result) {
      return null;
    }

    @Override
    public Map<String, Object> outputs(Registers entry, long result, OutputReader memory) {
      Map<String, Object> m = new LinkedHashMap<>();
      long p = arg(entry, 0);
      if (p != 0) {
        byte[] b = memory.read(p, 8);
        if (b == null) {
          return null;
        }
        m.put("tloc", Bytes.getLong(b, 0));
      }
      return m;
    }
  }

  /** getcpu(unsigned *cpu, unsigned *node, void *tcache). */
  static final class GetcpuDecoder implements Decoder {
    @Override
    public List<ProbeExit.OutputCopy> copies() {
      return List.of(new ProbeExit.OutputCopy(Register.RDI, 4),
          new ProbeExit.OutputCopy(Register.RSI, 4));
    }

    @Override
    public Map<String, Object> arguments(Registers entry) {
      return hexArguments(entry, "cpu", "node", "tcache");
    }

    @Override
    public long result(long rax) {
      return (int) rax;
    }

    @Override
    public Map<String, Object> outputs(Registers entry, long result, OutputReader memory) {
      Map<String, Object> m = new LinkedHashMap<>();
      if (result != 0) {
        return m;
      }
      String[] names = {"cpu", "node"};
      for (int i = 0; i < names.length; i++) {
        long p = arg(entry, i);
        if (p == 0) {
          continue;
        }
        byte[] b = memory.read(p, 4);
        if (b == null) {
          return null;
        }
        m.put(names[i], Integer.toUnsignedLong(Bytes.getInt(b, 0)));
      }
      return m;
    }
  }

  /**
   * ssize_t getrandom(void *buf, size_t len, unsigned flags, void *opaque_state, size_t
   * opaque_len), Linux 6.11+. With opaque_len == ~0UL (buf NULL, len 0, flags 0) the call asks
   * for struct vgetrandom_opaque_params: the size of one state and how to map states. The random
   * bytes themselves are not copied into records: they may be key material. Nor is anything
   * copied at the return without stopping the thread: a copy there cannot tell the query from an
   * ordinary call, whose opaque_state is the thread's random state (its next output bytes), so
   * the parameters are decoded only by backends that read at the stopped return
   * (docs/reliability.md, "Root safety: other users' processes").
   */
  static final class GetrandomDecoder implements Decoder {

    private static boolean query(Registers entry) {
      return arg(entry, 4) == -1L && arg(entry, 0) == 0 && arg(entry, 1) == 0;
    }

    @Override
    public Map<String, Object> arguments(Registers entry) {
      Map<String, Object> m = new LinkedHashMap<>();
      m.put("buffer", hex(arg(entry, 0)));
      m.put("length", Long.toUnsignedString(arg(entry, 1)));
      m.put("flags", flags(arg(entry, 2) & 0xffffffffL, GRND));
      m.put("opaque_state", hex(arg(entry, 3)));
      m.put("opaque_len", arg(entry, 4) == -1L ? "~0UL" : Long.toUnsignedString(arg(entry, 4)));
      return m;
    }

    @Override
    public long result(long rax) {
      return rax;
    }

    @Override
    public Map<String, Object> outputs(Registers entry, long result, OutputReader memory) {
      Map<String, Object> m = new LinkedHashMap<>();
      if (result < 0 || !query(entry) || arg(entry, 3) == 0) {
        return m;
      }
      byte[] b = memory.read(arg(entry, 3), 12);
      if (b == null) {
        return null;
      }
      Map<String, Object> params = new LinkedHashMap<>();
      params.put("size_of_opaque_state", Integer.toUnsignedLong(Bytes.getInt(b, 0)));
      params.put("mmap_prot", flags(Integer.toUnsignedLong(Bytes.getInt(b, 4)), PROT));
      params.put("mmap_flags", flags(Integer.toUnsignedLong(Bytes.getInt(b, 8)), MAP));
      m.put("opaque_params", params);
      return m;
    }
  }

  /** An export without a known prototype: the six argument registers, rax as a signed long. */
  static final class GenericDecoder implements Decoder {
    @Override
    public Map<String, Object> arguments(Registers entry) {
      return hexArguments(entry, "arg0", "arg1", "arg2", "arg3", "arg4", "arg5");
    }

    @Override
    public long result(long rax) {
      return rax;
    }

    @Override
    public Map<String, Object> outputs(Registers entry, long result, OutputReader memory) {
      return null; // the prototype is unknown: what it wrote cannot be told
    }
  }
}
