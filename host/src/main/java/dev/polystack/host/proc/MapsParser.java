package dev.polystack.host.proc;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/** Parses {@code /proc/PID/maps}. Strict: anything unexpected is rejected, not guessed at. */
final class MapsParser {
  static final String WHAT = "memory maps";

  private final Path file;
  private final ProcLimits limits;

  MapsParser(Path file, ProcLimits limits) {
    this.file = file;
    this.limits = limits;
  }

  ProcessMaps parse(byte[] data) throws ProcReadException {
    List<MemoryMapping> result = new ArrayList<>();
    int lineStart = 0;
    int lineNumber = 0;
    MemoryMapping previous = null;
    while (lineStart < data.length) {
      lineNumber++;
      int newline = indexOf(data, (byte) '\n', lineStart);
      if (newline < 0) {
        // The kernel always terminates every line, so a missing newline means truncation.
        throw ProcReadException.malformed(WHAT, file, lineNumber, "truncated line (no newline)");
      }
      if (newline - lineStart > limits.maxLineBytes()) {
        throw ProcReadException.malformed(
            WHAT, file, lineNumber, "line longer than " + limits.maxLineBytes() + " bytes");
      }
      if (result.size() >= limits.maxMappings()) {
        throw new ProcReadException(
            ProcReadException.Reason.TOO_LARGE,
            WHAT,
            file,
            "more than " + limits.maxMappings() + " mappings",
            null);
      }
      MemoryMapping m = parseLine(data, lineStart, newline, lineNumber);
      if (previous != null && Long.compareUnsigned(previous.end(), m.start()) > 0) {
        throw ProcReadException.malformed(
            WHAT, file, lineNumber, "mapping overlaps or is out of order with the previous one");
      }
      result.add(m);
      previous = m;
      lineStart = newline + 1;
    }
    return ProcessMaps.of(result);
  }

  private MemoryMapping parseLine(byte[] data, int from, int to, int lineNumber)
      throws ProcReadException {
    Cursor c = new Cursor(data, from, to, lineNumber);
    long start = c.hex('-', 16, "start address");
    long end = c.hex(' ', 16, "end address");
    if (Long.compareUnsigned(start, end) >= 0) {
      throw c.error("start address is not below end address");
    }
    String permsText = c.token(' ', "permissions");
    Permissions perms = Permissions.parseOrNull(permsText);
    if (perms == null) {
      throw c.error("bad permissions '" + permsText + "'");
    }
    long offset = c.hex(' ', 16, "offset");
    long major = c.hex(':', 3, "device major");
    long minor = c.hex(' ', 5, "device minor");
    if (major > 0xfff || minor > 0xfffff) {
      throw c.error("device number out of range");
    }
    long inode = c.decimalToSpaceOrEnd("inode");
    String rawPath = c.rest();
    boolean deleted = rawPath.endsWith(MemoryMapping.DELETED_SUFFIX);
    String path =
        deleted
            ? rawPath.substring(0, rawPath.length() - MemoryMapping.DELETED_SUFFIX.length())
            : rawPath;
    return new MemoryMapping(
        start,
        end,
        perms,
        offset,
        new DeviceNumber((int) major, (int) minor),
        inode,
        path,
        deleted);
  }

  private static int indexOf(byte[] data, byte b, int from) {
    for (int i = from; i < data.length; i++) {
      if (data[i] == b) {
        return i;
      }
    }
    return -1;
  }

  /** Walks one line; every failure names the line and the field. */
  private final class Cursor {
    private final byte[] data;
    private final int end;
    private final int lineNumber;
    private int pos;

    Cursor(byte[] data, int from, int end, int lineNumber) {
      this.data = data;
      this.pos = from;
      this.end = end;
      this.lineNumber = lineNumber;
    }

    ProcReadException error(String detail) {
      return ProcReadException.malformed(WHAT, file, lineNumber, detail);
    }

    long hex(char terminator, int maxDigits, String field) throws ProcReadException {
      long value = 0;
      int digits = 0;
      while (pos < end && data[pos] != terminator) {
        int d = Character.digit(data[pos], 16);
        if (d < 0 || data[pos] < 0) {
          throw error("invalid character in " + field);
        }
        if (++digits > maxDigits) {
          throw error(field + " has more than " + maxDigits + " hex digits");
        }
        value = (value << 4) | d;
        pos++;
      }
      if (digits == 0) {
        throw error("missing " + field);
      }
      expect(terminator, field);
      return value;
    }

    long decimalToSpaceOrEnd(String field) throws ProcReadException {
      long value = 0;
      int digits = 0;
      while (pos < end && data[pos] != ' ') {
        byte b = data[pos];
        if (b < '0' || b > '9') {
          throw error("invalid character in " + field);
        }
        int d = b - '0';
        digits++;
        if (Long.compareUnsigned(value, Long.divideUnsigned(-1L - d, 10)) > 0) {
          throw error(field + " does not fit in 64 bits");
        }
        value = value * 10 + d;
        pos++;
      }
      if (digits == 0) {
        throw error("missing " + field);
      }
      return value;
    }

    String token(char terminator, String field) throws ProcReadException {
      int begin = pos;
      while (pos < end && data[pos] != terminator) {
        pos++;
      }
      if (pos == begin) {
        throw error("missing " + field);
      }
      String text = new String(data, begin, pos - begin, StandardCharsets.US_ASCII);
      expect(terminator, field);
      return text;
    }

    /** Everything after the column padding; empty for anonymous mappings. */
    String rest() throws ProcReadException {
      while (pos < end && data[pos] == ' ') {
        pos++;
      }
      for (int i = pos; i < end; i++) {
        if (data[i] == 0) {
          throw error("NUL byte in path");
        }
      }
      // Paths are bytes; UTF-8 is the common case and lossy decoding beats failing.
      return new String(data, pos, end - pos, StandardCharsets.UTF_8);
    }

    private void expect(char terminator, String field) throws ProcReadException {
      if (pos >= end || data[pos] != terminator) {
        throw error("truncated after " + field);
      }
      pos++;
    }
  }
}
