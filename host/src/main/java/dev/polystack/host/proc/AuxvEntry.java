package dev.polystack.host.proc;

import java.util.Optional;

/**
 * One auxiliary vector entry. Types unknown to {@link AuxvType} are kept, not dropped, since newer
 * kernels add entries. Values are unsigned; pointer values (AT_EXECFN, AT_RANDOM, ...) point into
 * the target's memory, not ours.
 */
public record AuxvEntry(long type, long value) {

  public Optional<AuxvType> knownType() {
    return AuxvType.fromCode(type);
  }

  /** The symbolic name, or {@code AT_<number>} for types not in {@link AuxvType}. */
  public String name() {
    return knownType().map(Enum::name).orElse("AT_" + Long.toUnsignedString(type));
  }

  @Override
  public String toString() {
    return name() + "=0x" + Long.toHexString(value);
  }
}
