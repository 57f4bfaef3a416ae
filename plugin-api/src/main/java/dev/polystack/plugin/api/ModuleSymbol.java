package dev.polystack.plugin.api;

import java.util.Objects;

/**
 * A symbol of a module image.
 *
 * @param name the name without version
 * @param version the symbol version ({@code GLIBC_2.14}, {@code LINUX_2.6}) or empty
 * @param defaultVersion whether this is the default version of the name ({@code name@@VERSION})
 * @param value module virtual address
 * @param size size in bytes, 0 when unknown
 * @param function STT_FUNC (or STT_GNU_IFUNC), as opposed to data
 * @param exported defined and globally visible (GLOBAL or WEAK binding) in the dynamic table
 * @since 1.0
 */
public record ModuleSymbol(
    String name,
    String version,
    boolean defaultVersion,
    long value,
    long size,
    boolean function,
    boolean exported) {

  public ModuleSymbol {
    Objects.requireNonNull(name, "name");
    Objects.requireNonNull(version, "version");
  }

  /** {@code name}, {@code name@VERSION} or {@code name@@VERSION} as the GNU tools write it. */
  public String versionedName() {
    if (version.isEmpty()) {
      return name;
    }
    return name + (defaultVersion ? "@@" : "@") + version;
  }
}
