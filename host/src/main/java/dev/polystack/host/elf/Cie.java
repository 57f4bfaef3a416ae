package dev.polystack.host.elf;

import java.util.Objects;

/**
 * A Common Information Entry. Pointer encodings use the DW_EH_PE_* values in {@link PointerEncoding};
 * {@link PointerEncoding#OMIT} means the field is absent. When the personality encoding has the
 * indirect bit, {@code personality} is the address of the pointer, not the routine itself.
 */
public record Cie(
    long offset,
    int version,
    String augmentation,
    int addressSize,
    int segmentSize,
    long codeAlignmentFactor,
    long dataAlignmentFactor,
    long returnAddressRegister,
    int personalityEncoding,
    long personality,
    int lsdaEncoding,
    int fdeEncoding,
    boolean signalFrame,
    byte[] initialInstructions) {

  public Cie {
    Objects.requireNonNull(augmentation, "augmentation");
    initialInstructions = initialInstructions.clone();
  }

  @Override
  public byte[] initialInstructions() {
    return initialInstructions.clone();
  }

  public boolean hasPersonality() {
    return personalityEncoding != PointerEncoding.OMIT;
  }

  public boolean personalityIndirect() {
    return hasPersonality() && (personalityEncoding & PointerEncoding.INDIRECT) != 0;
  }

  public int initialInstructionsLength() {
    return initialInstructions.length;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof Cie c && c.offset == offset && c.version == version && c.augmentation.equals(augmentation)
        && c.codeAlignmentFactor == codeAlignmentFactor && c.dataAlignmentFactor == dataAlignmentFactor
        && c.returnAddressRegister == returnAddressRegister && c.personalityEncoding == personalityEncoding
        && c.personality == personality && c.lsdaEncoding == lsdaEncoding && c.fdeEncoding == fdeEncoding
        && c.signalFrame == signalFrame && c.addressSize == addressSize && c.segmentSize == segmentSize
        && java.util.Arrays.equals(c.initialInstructions, initialInstructions);
  }

  @Override
  public int hashCode() {
    return Long.hashCode(offset) * 31 + augmentation.hashCode();
  }

  @Override
  public String toString() {
    return "Cie[offset=0x" + Long.toHexString(offset) + ", v" + version + ", aug=\"" + augmentation + "\", caf="
        + codeAlignmentFactor + ", daf=" + dataAlignmentFactor + ", ra=" + returnAddressRegister + ", fdeEnc=0x"
        + Integer.toHexString(fdeEncoding) + ", insns=" + initialInstructions.length + "B]";
  }
}
