package dev.polystack.host.sys;

/**
 * The C heap of polystack's own process. Memory that native code frees (libbpf's parse of the
 * kernel's BTF while a BPF object loads, the JIT compiler's arenas) stays resident in glibc's
 * malloc arenas until it is trimmed: 11 MiB of the agent's RSS after its start
 * (docs/benchmarks.md, "The agent and record's fixed cost").
 */
public final class NativeHeap {
  private NativeHeap() {}

  /**
   * Returns the free memory of every malloc arena to the kernel; false where the C library has
   * no malloc_trim (not glibc), which leaves the memory where it is.
   */
  public static boolean trim() {
    try {
      Native.libc().malloc_trim(0);
      return true;
    } catch (LinkageError | RuntimeException e) {
      return false;
    }
  }
}
