package dev.polystack.host.proc;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.OptionalLong;

/** The auxiliary vector the kernel passed to a process at exec, without the AT_NULL terminator. */
public final class AuxVector {
  static final String WHAT = "auxiliary vector";
  // 64-bit target: a_type and a_val are both u64.
  private static final int ENTRY_BYTES = 16;

  private final List<AuxvEntry> entries;

  private AuxVector(List<AuxvEntry> entries) {
    this.entries = List.copyOf(entries);
  }

  public static AuxVector of(List<AuxvEntry> entries) {
    Objects.requireNonNull(entries, "entries");
    for (AuxvEntry e : entries) {
      if (e.type() == AuxvType.AT_NULL.code()) {
        throw new IllegalArgumentException("AT_NULL terminates the vector; it is not an entry");
      }
    }
    return new AuxVector(entries);
  }

  static AuxVector parse(byte[] data, Path file) throws ProcReadException {
    if (data.length % ENTRY_BYTES != 0) {
      throw ProcReadException.malformed(
          WHAT, file, "length " + data.length + " is not a multiple of " + ENTRY_BYTES);
    }
    ByteBuffer buf = ByteBuffer.wrap(data).order(ByteOrder.LITTLE_ENDIAN);
    List<AuxvEntry> entries = new ArrayList<>();
    while (buf.remaining() >= ENTRY_BYTES) {
      long type = buf.getLong();
      long value = buf.getLong();
      if (type == AuxvType.AT_NULL.code()) {
        return new AuxVector(entries);
      }
      entries.add(new AuxvEntry(type, value));
    }
    // A process without an mm (kernel thread, zombie) yields an empty file; so does truncation.
    // Either way there is no vector to report.
    throw ProcReadException.malformed(
        WHAT, file, data.length == 0 ? "empty" : "no AT_NULL terminator (truncated)");
  }

  public List<AuxvEntry> entries() {
    return entries;
  }

  /** Value of the first entry of this type. */
  public OptionalLong get(long type) {
    for (AuxvEntry e : entries) {
      if (e.type() == type) {
        return OptionalLong.of(e.value());
      }
    }
    return OptionalLong.empty();
  }

  public OptionalLong get(AuxvType type) {
    return get(type.code());
  }

  /** Address of the vDSO ELF header in the target (AT_SYSINFO_EHDR). */
  public OptionalLong vdsoBase() {
    return get(AuxvType.AT_SYSINFO_EHDR);
  }

  public OptionalLong pageSize() {
    return get(AuxvType.AT_PAGESZ);
  }

  /** Program entry point (AT_ENTRY). */
  public OptionalLong entryPoint() {
    return get(AuxvType.AT_ENTRY);
  }

  /** Load address of the dynamic loader (AT_BASE); 0 for static executables. */
  public OptionalLong interpreterBase() {
    return get(AuxvType.AT_BASE);
  }

  @Override
  public String toString() {
    return "AuxVector" + entries;
  }
}
