package dev.polystack.plugin.api;

import java.util.Map;
import java.util.Objects;

/**
 * One frame of a sampled stack.
 *
 * @param type the {@code profile.frame.type}: {@link #NATIVE}, {@link #KERNEL}, {@link #ERROR}
 *     or a plug-in's frame type
 * @param address the program counter (for callers, the return address), 0 if none
 * @param function the function name, or empty when unknown
 * @param file the source file or chunk name, or empty
 * @param line the line executing in this frame, 0 when unknown
 * @param startLine the line where the function is defined, 0 when unknown
 * @param module the module (file path) the address lies in, or empty
 * @param attributes extra per-frame facts, e.g. a JIT trace number
 * @since 1.0
 */
public record Frame(
    String type,
    long address,
    String function,
    String file,
    int line,
    int startLine,
    String module,
    Map<String, String> attributes) {

  public static final String NATIVE = "native";
  public static final String KERNEL = "kernel";
  public static final String ERROR = "error";

  public Frame {
    Objects.requireNonNull(type, "type");
    Objects.requireNonNull(function, "function");
    Objects.requireNonNull(file, "file");
    Objects.requireNonNull(module, "module");
    if (line < 0 || startLine < 0) {
      throw new IllegalArgumentException("negative line number");
    }
    attributes = Map.copyOf(attributes);
  }

  /** A frame that ends a stack the walker could not continue; {@code reason} is a short token. */
  public static Frame error(String reason) {
    return new Frame(ERROR, 0, reason, "", 0, 0, "", Map.of());
  }

  public boolean isError() {
    return ERROR.equals(type);
  }

  // equals and hashCode are written out: a record's generated ones run through method handles
  // that the host's C1-only JIT does not inline, and hosts hash frames for every sample they
  // intern (docs/benchmarks-host-cost.md). Same contract as the generated ones.
  @Override
  public boolean equals(Object o) {
    if (this == o) {
      return true;
    }
    return o instanceof Frame f && address == f.address && line == f.line
        && startLine == f.startLine && type.equals(f.type) && function.equals(f.function)
        && file.equals(f.file) && module.equals(f.module) && attributes.equals(f.attributes);
  }

  @Override
  public int hashCode() {
    int h = type.hashCode();
    h = 31 * h + Long.hashCode(address);
    h = 31 * h + function.hashCode();
    h = 31 * h + file.hashCode();
    h = 31 * h + line;
    h = 31 * h + startLine;
    h = 31 * h + module.hashCode();
    return 31 * h + (attributes.isEmpty() ? 0 : attributes.hashCode());
  }
}
