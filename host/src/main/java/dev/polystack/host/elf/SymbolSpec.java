package dev.polystack.host.elf;

/**
 * A lookup key: {@code name}, {@code name@VERSION} (exact version, default or not, like dlvsym) or
 * {@code name@@VERSION} (must be the default version).
 */
record SymbolSpec(String name, String version, boolean requireDefault) {

  static SymbolSpec parse(String spec) {
    int at = spec.indexOf('@');
    if (at <= 0) {
      return new SymbolSpec(spec, null, false);
    }
    boolean dbl = spec.startsWith("@@", at);
    String ver = spec.substring(at + (dbl ? 2 : 1));
    return new SymbolSpec(spec.substring(0, at), ver.isEmpty() ? null : ver, dbl);
  }

  /** 0 = no match; higher is a better match for a plain-name lookup. */
  int rank(ElfSymbol s) {
    if (!s.name().equals(name)) {
      return 0;
    }
    if (version != null) {
      if (!version.equals(s.version())) {
        return 0;
      }
      if (requireDefault && !s.isDefaultVersion()) {
        return 0;
      }
      return s.isDefined() ? 4 : 1;
    }
    if (!s.isDefined()) {
      return 1;
    }
    if (s.isDefaultVersion()) {
      return 4;
    }
    return s.version() == null ? 3 : 2;
  }
}
