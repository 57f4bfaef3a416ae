package dev.polystack.host.sys;

import jnr.ffi.LibraryLoader;
import jnr.ffi.Pointer;
import jnr.ffi.Runtime;

/**
 * Lazily loaded libc binding. The holder idiom keeps loading off the class-init path of callers
 * that never touch native code and avoids any mutable static state.
 */
public final class Native {
  private Native() {}

  private static final class Holder {
    static final LibC LIBC = LibraryLoader.create(LibC.class).load("c");
    static final Runtime RUNTIME = Runtime.getRuntime(LIBC);
  }

  public static LibC libc() {
    return Holder.LIBC;
  }

  public static Runtime runtime() {
    return Holder.RUNTIME;
  }

  /** errno saved by the most recent {@link LibC} call on the calling thread. */
  public static int errno() {
    return Holder.RUNTIME.getLastError();
  }

  /** Needed before calls such as PTRACE_PEEKDATA where -1 is also a valid result. */
  public static void clearErrno() {
    Holder.RUNTIME.setLastError(0);
  }

  /** Native memory freed when the returned pointer becomes unreachable. */
  public static Pointer allocate(int bytes) {
    return Holder.RUNTIME.getMemoryManager().allocateDirect(bytes, true);
  }

  /** View of memory this code does not own (e.g. an mmap'd region); never freed by jnr. */
  public static Pointer wrap(long address, long size) {
    return Holder.RUNTIME.getMemoryManager().newPointer(address, size);
  }
}
