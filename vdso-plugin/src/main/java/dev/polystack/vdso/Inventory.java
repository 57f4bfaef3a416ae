package dev.polystack.vdso;

import dev.polystack.plugin.api.CodeRange;
import dev.polystack.plugin.api.ImageReadException;
import dev.polystack.plugin.api.ModuleImage;
import dev.polystack.plugin.api.ModuleSymbol;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The vDSO's exported functions. The kernel exports each as {@code __vdso_NAME} plus a weak
 * alias {@code NAME} at the same address; the inventory keeps one entry per address under the
 * public name, and only functions that lie inside an executable segment.
 */
record Inventory(List<Export> exports) {

  /** An exported function; {@code name} is the public name without the prefix. */
  record Export(String name, String symbol, String version, boolean defaultVersion,
      long address, long size) {}

  static final String PREFIX = "__vdso_";

  Inventory {
    exports = List.copyOf(exports);
  }

  static Inventory of(ModuleImage image) throws ImageReadException {
    List<CodeRange> code = image.executableRanges();
    Map<Long, Export> byAddress = new LinkedHashMap<>();
    for (ModuleSymbol s : image.dynamicSymbols()) {
      if (!s.exported() || !s.function() || !s.name().startsWith(PREFIX)) {
        continue;
      }
      if (code.stream().noneMatch(r -> r.contains(s.value()))) {
        continue;
      }
      byAddress.putIfAbsent(s.value(), new Export(s.name().substring(PREFIX.length()), s.name(),
          s.version(), s.defaultVersion(), s.value(), s.size()));
    }
    return new Inventory(new ArrayList<>(byAddress.values()));
  }

  /** Finds {@code NAME}, {@code __vdso_NAME}, or either with {@code @VERSION}. */
  Export find(String request) {
    int at = request.indexOf('@');
    String name = at < 0 ? request : request.substring(0, at);
    String version = at < 0 ? null : request.substring(request.lastIndexOf('@') + 1);
    if (name.startsWith(PREFIX)) {
      name = name.substring(PREFIX.length());
    }
    for (Export e : exports) {
      if (e.name().equals(name) && (version == null || e.version().equals(version))) {
        return e;
      }
    }
    return null;
  }

  String names() {
    StringBuilder sb = new StringBuilder();
    for (Export e : exports) {
      if (sb.length() > 0) {
        sb.append(", ");
      }
      sb.append(e.name()).append('@').append(e.version());
    }
    return sb.toString();
  }
}
