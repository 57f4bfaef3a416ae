package dev.polystack.host.bpf;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * The allocation program's ring records (alloc_probe.h): a sampled allocation (version 3) or the
 * free of a sampled block (version 4). Parsing checks sizes against the record it came in.
 *
 * @param allocation true for version 3, false for a free
 * @param site the probed function's index (allocations)
 * @param kind its {@link AllocationProbes.Kind} code (allocations)
 * @param noAddress the kernel could not track the block: it never counts as in use
 * @param bytes the size asked for (allocations) or of the freed block
 * @param oldAddress realloc's old block (allocations), else 0
 * @param digest the stack's digest; 0: the definition that precedes it on this thread
 */
public record AllocRecord(boolean allocation, int tgid, int tid, long monotonicNanos, int site,
    int kind, boolean noAddress, long bytes, long address, long oldAddress, long digest) {
  static final int ALLOC_VERSION = 3;
  static final int FREE_VERSION = 4;
  static final int ALLOC_SIZE = 64;
  static final int FREE_SIZE = 48;
  /** v1 flags bit and offset of the digest in the 200-byte header (tick_capture.bpf.c). */
  private static final int FLAG_STACK_DEFINITION = 2;
  private static final int DIGEST_OFFSET = 192;

  /** Whether a ring record is one of these (version 3 or 4). */
  public static boolean isAllocation(ByteBuffer record) {
    int v = version(record);
    return v == ALLOC_VERSION || v == FREE_VERSION;
  }

  /** Whether a v1 record defines an allocation stack rather than a tick. */
  public static boolean isDefinition(ByteBuffer record) {
    ByteBuffer b = record.duplicate().order(ByteOrder.LITTLE_ENDIAN);
    return b.remaining() >= CaptureRecord.HEADER_SIZE && version(record) == CaptureRecord.VERSION
        && (b.getInt(b.position() + 28) & FLAG_STACK_DEFINITION) != 0;
  }

  /** The digest a definition record carries (0: sent without one). */
  public static long definitionDigest(ByteBuffer record) {
    ByteBuffer b = record.duplicate().order(ByteOrder.LITTLE_ENDIAN);
    if (b.remaining() < CaptureRecord.HEADER_SIZE) {
      throw new IllegalArgumentException("definition shorter than its header");
    }
    return b.getLong(b.position() + DIGEST_OFFSET);
  }

  /** Parses one v3 or v4 record; IllegalArgumentException when it is malformed. */
  public static AllocRecord parse(ByteBuffer in) {
    ByteBuffer b = in.duplicate().order(ByteOrder.LITTLE_ENDIAN);
    int base = b.position();
    int available = b.remaining();
    int version = version(in);
    int want = version == ALLOC_VERSION ? ALLOC_SIZE : version == FREE_VERSION ? FREE_SIZE : -1;
    if (want < 0 || available < want) {
      throw new IllegalArgumentException("allocation record version " + version + " of "
          + available + " bytes");
    }
    int header = Short.toUnsignedInt(b.getShort(base + 2));
    long size = Integer.toUnsignedLong(b.getInt(base + 4));
    if (header != want || size != want) {
      throw new IllegalArgumentException("allocation record header " + header + ", size "
          + size);
    }
    int tgid = b.getInt(base + 8);
    int tid = b.getInt(base + 12);
    long time = b.getLong(base + 16);
    if (version == FREE_VERSION) {
      return new AllocRecord(false, tgid, tid, time, 0, 0, false, b.getLong(base + 40),
          b.getLong(base + 24), 0, b.getLong(base + 32));
    }
    int site = Short.toUnsignedInt(b.getShort(base + 24));
    int kind = b.get(base + 26) & 0xff;
    int flags = b.get(base + 27) & 0xff;
    if (site >= AllocationProbes.MAX_SITES || AllocationProbes.Kind.of(kind) == null) {
      throw new IllegalArgumentException("allocation record of site " + site + ", kind " + kind);
    }
    return new AllocRecord(true, tgid, tid, time, site, kind, (flags & 2) != 0,
        b.getLong(base + 32), b.getLong(base + 40), b.getLong(base + 48), b.getLong(base + 56));
  }

  private static int version(ByteBuffer record) {
    return record.remaining() < 2 ? -1 : Short.toUnsignedInt(
        record.duplicate().order(ByteOrder.LITTLE_ENDIAN).getShort(record.position()));
  }
}
