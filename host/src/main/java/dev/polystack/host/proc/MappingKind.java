package dev.polystack.host.proc;

/** What backs a mapping, derived from its path column. */
public enum MappingKind {
  /** A file on some filesystem (the path starts with '/'), possibly deleted. */
  FILE,
  /** No path at all. */
  ANONYMOUS,
  HEAP,
  /** The main thread stack ({@code [stack]}; older kernels also printed {@code [stack:TID]}). */
  STACK,
  VDSO,
  VVAR,
  VSYSCALL,
  /** Any other bracketed or unrecognised name, e.g. {@code [anon:name]} or {@code [uprobes]}. */
  OTHER;

  static MappingKind classify(String path) {
    if (path.isEmpty()) {
      return ANONYMOUS;
    }
    if (path.charAt(0) == '/') {
      return FILE;
    }
    switch (path) {
      case "[heap]":
        return HEAP;
      case "[stack]":
        return STACK;
      case "[vdso]":
        return VDSO;
      case "[vvar]":
        return VVAR;
      case "[vsyscall]":
        return VSYSCALL;
      default:
        return path.startsWith("[stack:") ? STACK : OTHER;
    }
  }
}
