package dev.polystack.luajit;

import java.util.Map;

/**
 * Function prototypes of one process: chunk name, definition line and line table, read once and
 * cached. A prototype freed and another allocated at the same address would otherwise keep the
 * old name, so a cache hit is accepted only if the identity fields read now still match.
 */
final class Protos {
  static final int MAX_CACHED = 8192;

  /** What a frame label needs from a prototype. */
  record Proto(long address, String chunk, int firstLine, int numLine, int sizeBc,
      long lineInfo, long chunkRef) {
    long bytecode() {
      return address + Layout.PROTO_SIZE;
    }
  }

  private final Map<Long, Proto> cache = new BoundedCache<>(MAX_CACHED);

  synchronized Proto get(TargetReader reader, long proto) throws WalkException {
    reader.expectGcType(proto, Layout.GCT_PROTO, "proto");
    int sizeBc = reader.u32(proto + Layout.PT_SIZEBC, "proto");
    long chunkRef = reader.u64(proto + Layout.PT_CHUNKNAME, "proto") & Layout.GCVMASK;
    int firstLine = reader.u32(proto + Layout.PT_FIRSTLINE, "proto");
    Proto cached = cache.get(proto);
    if (cached != null && cached.sizeBc() == sizeBc && cached.chunkRef() == chunkRef
        && cached.firstLine() == firstLine) {
      return cached;
    }
    if (sizeBc <= 0 || sizeBc > (1 << 26)) {
      throw new WalkException("bad_proto", "sizebc " + sizeBc);
    }
    String chunk = reader.string(chunkRef, TargetReader.MAX_STRING);
    if (chunk.startsWith("@") || chunk.startsWith("=")) {
      chunk = chunk.substring(1);
    }
    int numLine = reader.u32(proto + Layout.PT_NUMLINE, "proto");
    long lineInfo = reader.u64(proto + Layout.PT_LINEINFO, "proto");
    Proto p = new Proto(proto, chunk, firstLine, numLine, sizeBc, lineInfo, chunkRef);
    cache.put(proto, p);
    return p;
  }

  /**
   * The line a frame of {@code p} shows when its position is unknown: the line the function is
   * defined on (what LuaJIT's own stack dumps fall back to), and for a main chunk, defined on
   * line 0, the line of its first instruction; 0 only without a line table.
   */
  static int entryLine(TargetReader reader, Proto p) throws WalkException {
    if (p.lineInfo() == 0) {
      return 0;
    }
    if (p.firstLine() > 0) {
      return p.firstLine();
    }
    return p.sizeBc() > 1 ? Math.max(0, line(reader, p, 1)) : 0;
  }

  /** The source line of bytecode position {@code pos} (lj_debug_line), 0 when unknown. */
  static int line(TargetReader reader, Proto p, int pos) throws WalkException {
    if (p.lineInfo() == 0 || pos < 0) {
      return 0; // stripped bytecode has no line table
    }
    if (pos == 0) {
      return p.firstLine();
    }
    if (pos > p.sizeBc()) {
      return 0;
    }
    if (pos == p.sizeBc()) {
      return p.firstLine() + p.numLine();
    }
    long entry = p.lineInfo();
    int delta;
    if (p.numLine() < 256) {
      delta = reader.u8(entry + (pos - 1), "lineinfo");
    } else if (p.numLine() < 65536) {
      delta = reader.u16(entry + 2L * (pos - 1), "lineinfo");
    } else {
      delta = reader.u32(entry + 4L * (pos - 1), "lineinfo");
    }
    return p.firstLine() + delta;
  }
}
