package dev.polystack.plugin.api;

/**
 * Version of this plug-in API, {@code major.minor}.
 *
 * <p>A host accepts a plug-in built against the same major version and a minor version no newer
 * than its own: minor versions only add default methods and value types, a major version may
 * change or remove them.
 *
 * @since 1.0
 */
public record ApiVersion(int major, int minor) implements Comparable<ApiVersion> {

  /** The API version this artifact defines. Plug-ins put it into their descriptor. */
  public static final ApiVersion CURRENT = new ApiVersion(2, 0);

  public ApiVersion {
    if (major < 0 || minor < 0) {
      throw new IllegalArgumentException("API version parts must be >= 0: " + major + "." + minor);
    }
  }

  /** Parses {@code "1.0"}. */
  public static ApiVersion parse(String text) {
    String[] parts = text.trim().split("\\.", -1);
    if (parts.length != 2) {
      throw new IllegalArgumentException("API version must be MAJOR.MINOR, got '" + text + "'");
    }
    try {
      return new ApiVersion(Integer.parseInt(parts[0]), Integer.parseInt(parts[1]));
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("API version must be MAJOR.MINOR, got '" + text + "'", e);
    }
  }

  /**
   * Whether this version provides everything of {@code major.minor}: how a plug-in asks at run
   * time what the host it runs in offers, since {@link #CURRENT} read at run time is the host's
   * ({@code if (ApiVersion.CURRENT.atLeast(1, 6)) ... thread.planOutcome(plan) ...}). A call of a
   * newer method is linked only when it runs, so a guarded one is safe on an older host. On a
   * host older than 1.6, which lacks this method, compare {@link #major()} and {@link #minor()}.
   *
   * @since 1.6
   */
  public boolean atLeast(int major, int minor) {
    return this.major == major && this.minor >= minor;
  }

  /** Whether a host at this version can load a plug-in built against {@code plugin}. */
  public boolean canLoad(ApiVersion plugin) {
    return plugin.major == major && plugin.minor <= minor;
  }

  @Override
  public int compareTo(ApiVersion other) {
    return major != other.major
        ? Integer.compare(major, other.major)
        : Integer.compare(minor, other.minor);
  }

  @Override
  public String toString() {
    return major + "." + minor;
  }
}
