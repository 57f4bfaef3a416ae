package dev.polystack.host.elf;

import java.util.HexFormat;
import java.util.Objects;

/** NT_GNU_BUILD_ID payload as lowercase hex. */
public record BuildId(String hex) {
  public BuildId {
    Objects.requireNonNull(hex, "hex");
    if (hex.isEmpty() || hex.length() % 2 != 0 || !hex.chars().allMatch(c -> (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
      throw new IllegalArgumentException("not lowercase hex: " + hex);
    }
  }

  static BuildId of(byte[] bytes) {
    return new BuildId(HexFormat.of().formatHex(bytes));
  }

  public byte[] bytes() {
    return HexFormat.of().parseHex(hex);
  }

  @Override
  public String toString() {
    return hex;
  }
}
