package dev.polystack.host.elf;

import java.util.Arrays;
import java.util.Objects;

/**
 * A Frame Description Entry covering {@code [pcBegin, pcBegin + pcRange)} (link-time addresses).
 * Instructions are kept raw for a later DW_CFA evaluator. {@code lsda} is meaningful only when
 * {@link #hasLsda()}.
 */
public record Fde(
    long offset,
    Cie cie,
    long pcBegin,
    long pcRange,
    byte[] augmentationData,
    boolean hasLsda,
    long lsda,
    byte[] instructions) {

  public Fde {
    Objects.requireNonNull(cie, "cie");
    augmentationData = augmentationData.clone();
    instructions = instructions.clone();
  }

  @Override
  public byte[] augmentationData() {
    return augmentationData.clone();
  }

  @Override
  public byte[] instructions() {
    return instructions.clone();
  }

  public int instructionsLength() {
    return instructions.length;
  }

  public long pcEnd() {
    return pcBegin + pcRange;
  }

  public boolean contains(long pc) {
    return Long.compareUnsigned(pc, pcBegin) >= 0 && Long.compareUnsigned(pc - pcBegin, pcRange) < 0;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof Fde f && f.offset == offset && f.cie.equals(cie) && f.pcBegin == pcBegin
        && f.pcRange == pcRange && f.hasLsda == hasLsda && f.lsda == lsda
        && Arrays.equals(f.augmentationData, augmentationData) && Arrays.equals(f.instructions, instructions);
  }

  @Override
  public int hashCode() {
    return Long.hashCode(offset) * 31 + Long.hashCode(pcBegin);
  }

  @Override
  public String toString() {
    return "Fde[offset=0x" + Long.toHexString(offset) + ", pc=0x" + Long.toHexString(pcBegin) + "..0x"
        + Long.toHexString(pcEnd()) + ", insns=" + instructions.length + "B, cie=0x" + Long.toHexString(cie.offset())
        + "]";
  }
}
