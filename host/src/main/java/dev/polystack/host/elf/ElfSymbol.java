package dev.polystack.host.elf;

import java.util.Objects;

/**
 * One symbol table entry. {@code value} is the link-time address; {@code version} is the GNU symbol
 * version (null when unversioned) and {@code hiddenVersion} marks a non-default version.
 */
public record ElfSymbol(
    int index,
    String name,
    long value,
    long size,
    int info,
    int other,
    int sectionIndex,
    String version,
    boolean hiddenVersion,
    boolean dynamic) {

  public static final int STT_NOTYPE = 0;
  public static final int STT_OBJECT = 1;
  public static final int STT_FUNC = 2;
  public static final int STT_SECTION = 3;
  public static final int STT_FILE = 4;
  public static final int STT_TLS = 6;
  public static final int STT_GNU_IFUNC = 10;
  public static final int STB_LOCAL = 0;
  public static final int STB_GLOBAL = 1;
  public static final int STB_WEAK = 2;
  public static final int SHN_UNDEF = 0;
  public static final int SHN_ABS = 0xfff1;

  public ElfSymbol {
    Objects.requireNonNull(name, "name");
    if (index < 0) {
      throw new IllegalArgumentException("index < 0");
    }
    if (version != null && version.isEmpty()) {
      version = null;
    }
  }

  public int type() {
    return info & 0xf;
  }

  public int binding() {
    return (info >>> 4) & 0xf;
  }

  public int visibility() {
    return other & 3;
  }

  public boolean isDefined() {
    return sectionIndex != SHN_UNDEF;
  }

  public boolean isFunction() {
    return type() == STT_FUNC || type() == STT_GNU_IFUNC;
  }

  /** True for the version a plain-name lookup binds to (the {@code @@} version). */
  public boolean isDefaultVersion() {
    return version != null && !hiddenVersion && isDefined();
  }

  /** {@code name@@VERSION} for the default version, {@code name@VERSION} otherwise, or plain name. */
  public String versionedName() {
    if (version == null) {
      return name;
    }
    return name + (isDefaultVersion() ? "@@" : "@") + version;
  }

  /** Whether {@code address} falls inside {@code [value, value + size)}. */
  public boolean contains(long address) {
    return Long.compareUnsigned(address, value) >= 0 && Long.compareUnsigned(address - value, size) < 0;
  }

  @Override
  public String toString() {
    return versionedName() + "@0x" + Long.toHexString(value) + "+" + size;
  }
}
