package dev.polystack.host.proc;

/**
 * Upper bounds applied to everything read from /proc. A hostile or broken procfs (or a prepared
 * directory) must not make the host allocate without limit.
 *
 * @param maxMapsBytes size bound of {@code /proc/PID/maps}
 * @param maxLineBytes bound of one maps line; PATH_MAX plus the fixed columns fits comfortably
 * @param maxMappings bound on the number of mappings
 * @param maxSmallFileBytes bound for stat, status, comm
 * @param maxAuxvBytes bound for {@code /proc/PID/auxv}
 * @param maxCmdlineBytes cmdline is truncated (and flagged) beyond this, not rejected
 * @param maxTasks bound on the number of threads listed
 */
public record ProcLimits(
    long maxMapsBytes,
    int maxLineBytes,
    int maxMappings,
    int maxSmallFileBytes,
    int maxAuxvBytes,
    int maxCmdlineBytes,
    int maxTasks) {

  private static final ProcLimits DEFAULTS =
      new ProcLimits(64L << 20, 4096 + 4096, 1 << 21, 64 << 10, 64 << 10, 1 << 20, 1 << 22);

  public ProcLimits {
    // Arrays are indexed by int, so the maps bound must fit one.
    if (maxMapsBytes <= 0 || maxMapsBytes > Integer.MAX_VALUE - 16) {
      throw new IllegalArgumentException("maxMapsBytes out of range: " + maxMapsBytes);
    }
    requirePositive(maxLineBytes, "maxLineBytes");
    requirePositive(maxMappings, "maxMappings");
    requirePositive(maxSmallFileBytes, "maxSmallFileBytes");
    requirePositive(maxAuxvBytes, "maxAuxvBytes");
    requirePositive(maxCmdlineBytes, "maxCmdlineBytes");
    requirePositive(maxTasks, "maxTasks");
    if (maxSmallFileBytes > Integer.MAX_VALUE - 16
        || maxAuxvBytes > Integer.MAX_VALUE - 16
        || maxCmdlineBytes > Integer.MAX_VALUE - 16) {
      throw new IllegalArgumentException("file bound too large");
    }
  }

  public static ProcLimits defaults() {
    return DEFAULTS;
  }

  private static void requirePositive(int value, String name) {
    if (value <= 0) {
      throw new IllegalArgumentException(name + " must be positive: " + value);
    }
  }
}
