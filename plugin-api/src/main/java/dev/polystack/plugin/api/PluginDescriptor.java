package dev.polystack.plugin.api;

import java.util.Collections;
import java.util.EnumSet;
import java.util.Objects;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * Identity and declared abilities of a plug-in.
 *
 * @param id stable identifier, lower case ({@code luajit}, {@code vdso})
 * @param version the plug-in's own version
 * @param apiVersion the oldest plug-in API version the plug-in needs: the version that added
 *     the newest API element it uses unguarded ({@code @since} says which). A host loads it when
 *     its own API has the same major version and at least this minor; stating {@link
 *     ApiVersion#CURRENT} instead makes a rebuild on a newer plugin-api unloadable on older hosts
 *     for no reason
 * @param frameType the {@code profile.frame.type} of the frames it produces, or empty for probe
 *     plug-ins that produce none
 * @param capabilities what it says it can do (see {@link Capability})
 * @param description one line for {@code polystack plugins}
 * @since 1.0
 */
public record PluginDescriptor(
    String id,
    String version,
    ApiVersion apiVersion,
    String frameType,
    Set<Capability> capabilities,
    String description) {

  private static final Pattern ID = Pattern.compile("[a-z0-9][a-z0-9._-]{0,63}");

  public PluginDescriptor {
    Objects.requireNonNull(id, "id");
    Objects.requireNonNull(version, "version");
    Objects.requireNonNull(apiVersion, "apiVersion");
    Objects.requireNonNull(frameType, "frameType");
    Objects.requireNonNull(capabilities, "capabilities");
    Objects.requireNonNull(description, "description");
    if (!ID.matcher(id).matches()) {
      throw new IllegalArgumentException(
          "plug-in id must match " + ID.pattern() + ", got '" + id + "'");
    }
    if (version.isBlank()) {
      throw new IllegalArgumentException("plug-in version must not be blank");
    }
    if (!frameType.isEmpty() && !ID.matcher(frameType).matches()) {
      throw new IllegalArgumentException(
          "frame type must match " + ID.pattern() + ", got '" + frameType + "'");
    }
    // An EnumSet view keeps the declaration order, so listings are stable.
    capabilities =
        capabilities.isEmpty()
            ? Set.of()
            : Collections.unmodifiableSet(EnumSet.copyOf(capabilities));
  }

  public boolean has(Capability capability) {
    return capabilities.contains(capability);
  }
}
