package example.cpython;

import dev.polystack.plugin.api.Bytes;
import dev.polystack.plugin.api.MemoryReadException;
import dev.polystack.plugin.api.RemoteMemory;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Names and line tables of code objects, read through {@link RemoteMemory#stable()} (a code
 * object does not change while a frame runs it) and cached by address. A cached entry is reused
 * only while the object at that address still has the same type, name, file and first line, so
 * a code object made where an older one was is read again.
 *
 * <p>The walk reads code objects after the tick, so a frame's code object may have been freed
 * between the tick and the walk (a module's code, as soon as its last line ran). When the
 * address no longer holds a code object at all, the entry cached for it stands for it and that
 * is counted ({@link #freedSinceTick}): README.md, "Limits".
 */
final class CodeObjects {
  /** Code objects remembered per process. */
  static final int MAX_CACHED = 4096;
  /** Longest name or file read, in characters. */
  static final int MAX_STRING = 1024;
  /** Longest line table read, in bytes. */
  static final int MAX_LINE_TABLE = 64 << 10;

  /** What a frame needs of one code object. */
  /** @param frameWords data stack words a frame of this code takes, -1 if implausible */
  record Code(long filenameRef, long qualnameRef, int firstLine, long linetableRef,
      String qualname, String filename, byte[] lineTable, int frameWords) {}

  /** Largest plausible {@code co_nlocalsplus} or {@code co_stacksize}. */
  static final int MAX_SLOTS = 1 << 20;

  private final Layout layout;
  private final long codeType;
  private long freedSinceTick;
  private final int headerBytes;
  private final Map<Long, Code> cache = new LinkedHashMap<>(256, 0.75f, true) {
    @Override
    protected boolean removeEldestEntry(Map.Entry<Long, Code> eldest) {
      return size() > MAX_CACHED;
    }
  };

  /** @param codeType the runtime address of {@code PyCode_Type} */
  CodeObjects(Layout layout, long codeType) {
    this.layout = layout;
    this.codeType = codeType;
    this.headerBytes = Math.max(layout.codeLinetable(), Math.max(layout.codeQualname(),
        layout.codeFilename())) + 8;
  }

  /** Code objects named from the cache because their address no longer held one; then zero. */
  long getAndResetFreedSinceTick() {
    long n = freedSinceTick;
    freedSinceTick = 0;
    return n;
  }

  /** The code object at {@code address}, validated; throws {@link WalkException} if it is not. */
  Code code(RemoteMemory stable, long address) throws WalkException {
    if (!Pointers.plausible(address)) {
      throw new WalkException("bad_code_pointer");
    }
    byte[] header = new byte[headerBytes];
    String gone = null;
    try {
      if (stable.read(address, header, 0, headerBytes) < headerBytes) {
        gone = "unreadable_code";
      } else if (Bytes.getLong(header, Layout.OB_TYPE) != codeType) {
        gone = "not_a_code_object";
      }
    } catch (MemoryReadException e) {
      gone = "unreadable_code";
    }
    if (gone != null) {
      Code last = cache.get(address);
      if (last == null) {
        throw new WalkException(gone);
      }
      freedSinceTick++;
      return last;
    }
    long filenameRef = Bytes.getLong(header, layout.codeFilename());
    long qualnameRef = Bytes.getLong(header, layout.codeQualname());
    long linetableRef = Bytes.getLong(header, layout.codeLinetable());
    int firstLine = Bytes.getInt(header, layout.codeFirstLine());
    int stack = Bytes.getInt(header, layout.codeStacksize());
    int locals = Bytes.getInt(header, layout.codeNlocalsplus());
    int frameWords = stack < 0 || stack > MAX_SLOTS || locals < 0 || locals > MAX_SLOTS ? -1
        : layout.frameSpecialWords() + stack + locals;
    Code cached = cache.get(address);
    if (cached != null && cached.filenameRef == filenameRef && cached.qualnameRef == qualnameRef
        && cached.firstLine == firstLine && cached.linetableRef == linetableRef
        && cached.frameWords == frameWords) {
      return cached;
    }
    Code code = new Code(filenameRef, qualnameRef, firstLine, linetableRef,
        string(stable, qualnameRef), string(stable, filenameRef), lineTable(stable, linetableRef),
        frameWords);
    cache.put(address, code);
    return code;
  }

  private byte[] lineTable(RemoteMemory stable, long bytesObject) throws WalkException {
    if (!Pointers.plausible(bytesObject)) {
      throw new WalkException("bad_line_table");
    }
    try {
      long size = stable.readLong(bytesObject + Layout.OB_SIZE);
      if (size < 0 || size > MAX_LINE_TABLE) {
        throw new WalkException("bad_line_table");
      }
      return stable.readFully(bytesObject + Layout.BYTES_DATA, (int) size);
    } catch (MemoryReadException e) {
      throw new WalkException("bad_line_table");
    }
  }

  /** A str object: compact ASCII, or compact UCS-1/2/4; anything else is malformed. */
  private String string(RemoteMemory stable, long str) throws WalkException {
    if (!Pointers.plausible(str)) {
      throw new WalkException("bad_string");
    }
    try {
      long length = stable.readLong(str + Layout.OB_SIZE);
      int state = stable.readInt(str + Layout.STR_STATE);
      int kind = (state >>> 2) & 7;
      boolean compact = (state & (1 << 5)) != 0;
      boolean ascii = (state & (1 << 6)) != 0;
      if (!compact || length < 0 || (kind != 1 && kind != 2 && kind != 4)) {
        throw new WalkException("bad_string");
      }
      int chars = (int) Math.min(length, MAX_STRING);
      if (ascii) {
        return new String(stable.readFully(str + layout.asciiSize(), chars),
            StandardCharsets.ISO_8859_1);
      }
      byte[] data = stable.readFully(str + layout.compactSize(), chars * kind);
      return switch (kind) {
        case 1 -> new String(data, StandardCharsets.ISO_8859_1);
        case 2 -> new String(data, StandardCharsets.UTF_16LE);
        default -> ucs4(data);
      };
    } catch (MemoryReadException e) {
      throw new WalkException("bad_string");
    }
  }

  private static String ucs4(byte[] data) {
    StringBuilder sb = new StringBuilder(data.length / 4);
    for (int i = 0; i + 4 <= data.length; i += 4) {
      int cp = Bytes.getInt(data, i);
      sb.appendCodePoint(Character.isValidCodePoint(cp) ? cp : 0xfffd);
    }
    return sb.toString();
  }
}
