package example.cpython;

/**
 * The PEP 657 location table of a code object ({@code co_linetable} in 3.11 and 3.12), decoded
 * just far enough to answer "which line is code unit N on". Every entry starts with a byte with
 * bit 7 set: bits 3-6 are the kind, bits 0-2 the number of code units it covers minus one. The
 * table comes from the target: a malformed one answers 0 (unknown), never throws.
 */
final class LineTable {
  private static final int NO_LOCATION = 15;
  private static final int LONG_FORM = 14;
  private static final int NO_COLUMNS = 13;
  private static final int ONE_LINE_FIRST = 10;

  private LineTable() {}

  /**
   * The line that code unit {@code unit} (index from the first instruction) is on, or 0 when the
   * table has none for it or is malformed.
   */
  static int lineAt(byte[] table, int firstLine, int unit) {
    if (unit < 0) {
      return firstLine; // the frame has not run its first instruction yet
    }
    int[] at = {0};
    int line = firstLine;
    int address = 0;
    while (at[0] < table.length) {
      int head = table[at[0]++] & 0xff;
      if ((head & 0x80) == 0) {
        return 0;
      }
      int kind = (head >> 3) & 15;
      int length = (head & 7) + 1;
      boolean located = true;
      if (kind == NO_LOCATION) {
        located = false;
      } else if (kind == LONG_FORM) {
        line += signedVarint(table, at);
        varint(table, at); // end line delta
        varint(table, at); // column
        varint(table, at); // end column
      } else if (kind == NO_COLUMNS) {
        line += signedVarint(table, at);
      } else if (kind >= ONE_LINE_FIRST) {
        line += kind - ONE_LINE_FIRST;
        at[0] += 2; // start and end column
      } else {
        at[0] += 1; // short form: the line does not change
      }
      if (at[0] > table.length) {
        return 0;
      }
      if (unit < address + length) {
        return located && line > 0 ? line : 0;
      }
      address += length;
    }
    return 0;
  }

  /** 6-bit little-endian chunks, bit 6 set while more follow; bounded to 5 chunks. */
  private static int varint(byte[] table, int[] at) {
    int value = 0;
    for (int shift = 0; shift < 30 && at[0] < table.length; shift += 6) {
      int b = table[at[0]++] & 0xff;
      value |= (b & 63) << shift;
      if ((b & 64) == 0) {
        return value;
      }
    }
    at[0] = table.length + 1; // ran off the table: malformed
    return 0;
  }

  /** A varint with the sign in bit 0. */
  private static int signedVarint(byte[] table, int[] at) {
    int u = varint(table, at);
    return (u & 1) != 0 ? -(u >>> 1) : u >>> 1;
  }
}
