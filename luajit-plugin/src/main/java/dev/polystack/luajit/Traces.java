package dev.polystack.luajit;

import dev.polystack.plugin.api.CodeRange;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;

/**
 * JIT traces of one VM: where their machine code lies, read from J->trace. Traces are freed and
 * their numbers reused, so a snapshot is only trusted for PCs it contains, and re-read whenever
 * the host asks for code ranges again.
 */
final class Traces {
  static final int MAX_TRACES = 1 << 16;
  /**
   * Machine code of one trace: it lies in one mcode area, at most -Omaxmcode (KB, 512 by
   * default; 256 MiB is far beyond any real setting).
   */
  static final long MAX_MCODE = 256L << 20;

  /** One trace's machine code and what unwinding and labelling need. */
  record Trace(int number, long address, long mcode, long size, long startPc, long startProto,
      int spAdjust) {
    boolean contains(long pc) {
      return Long.compareUnsigned(pc - mcode, size) < 0;
    }

    // Written out: TraceSnapshots' caches hash a Trace on every sample on a trace, and a
    // record's generated methods run through method handles the host's C1 does not inline.
    @Override
    public boolean equals(Object o) {
      if (o == this) {
        return true;
      }
      return o instanceof Trace t && t.number == number && t.address == address
          && t.mcode == mcode && t.size == size && t.startPc == startPc
          && t.startProto == startProto && t.spAdjust == spAdjust;
    }

    @Override
    public int hashCode() {
      return Long.hashCode(mcode) * 31 + number;
    }
  }

  /**
   * Where J->trace lives relative to G, by GG_G2DISP (both move with the same build options);
   * measured on upstream and OpenResty 2.1 builds with default flags. Each candidate is
   * validated against the traces it finds.
   */
  private static final Map<Long, long[]> TRACE_ARRAY_BY_G2DISP = Map.of(
      0xf50L, new long[] {0x428},
      0xf80L, new long[] {0x458},
      0xf88L, new long[] {0x460},
      0xfa0L, new long[] {0x460, 0x468},
      0xfa8L, new long[] {0x460},
      0xfc8L, new long[] {0x460, 0x468, 0x470});

  private final List<Trace> traces;

  private Traces(List<Trace> traces) {
    this.traces = List.copyOf(traces);
  }

  static final Traces NONE = new Traces(List.of());

  List<Trace> all() {
    return traces;
  }

  Trace at(long pc) {
    for (Trace t : traces) {
      if (t.contains(pc)) {
        return t;
      }
    }
    return null;
  }

  Trace byNumber(int number) {
    for (Trace t : traces) {
      if (t.number() == number) {
        return t;
      }
    }
    return null;
  }

  List<CodeRange> ranges() {
    List<CodeRange> out = new ArrayList<>();
    for (Trace t : traces) {
      if (t.size() > 0) {
        out.add(new CodeRange(t.mcode(), t.mcode() + t.size(), "luajit trace " + t.number()));
      }
    }
    return out;
  }

  /** Candidate offsets of J->trace from G for a G2DISP, most likely first. */
  static long[] candidates(long g2disp) {
    return TRACE_ARRAY_BY_G2DISP.getOrDefault(g2disp, new long[0]);
  }

  /** Reads every live trace; fails if the array does not look like LuaJIT's. */
  static Traces read(TargetReader r, long g, long offset) throws WalkException {
    long array = r.u64(g + offset, "trace_array");
    int size = r.u32(g + offset + 12, "trace_array");
    if (array == 0 && size == 0) {
      return NONE;
    }
    if (size <= 0 || size > MAX_TRACES) {
      throw new WalkException("bad_trace_array", "sizetrace " + size);
    }
    byte[] refs = r.bytes(array, 8 * size, "trace_array");
    List<Trace> out = new ArrayList<>();
    for (int i = 1; i < size; i++) {
      long t = dev.polystack.plugin.api.Bytes.getLong(refs, 8 * i) & Layout.GCVMASK;
      if (t == 0) {
        continue;
      }
      r.expectGcType(t, Layout.GCT_TRACE, "trace");
      int number = r.u16(t + Layout.T_TRACENO, "trace");
      if (number != i) {
        throw new WalkException("bad_trace", "slot " + i + " holds trace " + number);
      }
      long mcode = r.u64(t + Layout.T_MCODE, "trace");
      long szmcode = r.u32(t + Layout.T_SZMCODE, "trace") & 0xffffffffL;
      // Machine code lies in user space like everything else; a range past its top (or
      // wrapping at 2^64) could not even be a CodeRange, and would claim foreign code.
      if (szmcode > 0 && (mcode <= 4096 || szmcode > MAX_MCODE
          || Long.compareUnsigned(mcode + szmcode, TargetReader.USER_MAX) > 0
          || Long.compareUnsigned(mcode, TargetReader.USER_MAX) >= 0)) {
        throw new WalkException("bad_trace", "trace " + i + " mcode 0x"
            + Long.toHexString(mcode) + "+" + szmcode);
      }
      long startPc = r.u64(t + Layout.T_STARTPC, "trace");
      long startPt = r.u64(t + Layout.T_STARTPT, "trace") & Layout.GCVMASK;
      int spAdjust = r.u16(t + Layout.T_SPADJUST, "trace");
      out.add(new Trace(number, t, mcode, szmcode, startPc, startPt, spAdjust));
    }
    out.sort(Comparator.comparingLong(Trace::mcode));
    return new Traces(out);
  }
}
