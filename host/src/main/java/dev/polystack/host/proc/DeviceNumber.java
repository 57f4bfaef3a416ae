package dev.polystack.host.proc;

/** A device number as shown in maps ({@code major:minor}, hexadecimal). */
public record DeviceNumber(int major, int minor) {
  // Linux dev_t: 12-bit major, 20-bit minor.
  private static final int MAX_MAJOR = (1 << 12) - 1;
  private static final int MAX_MINOR = (1 << 20) - 1;

  public DeviceNumber {
    if (major < 0 || major > MAX_MAJOR || minor < 0 || minor > MAX_MINOR) {
      throw new IllegalArgumentException("device number out of range: " + major + ":" + minor);
    }
  }

  @Override
  public String toString() {
    return String.format("%02x:%02x", major, minor);
  }
}
