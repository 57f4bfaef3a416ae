package dev.polystack.host.bpf;

import dev.polystack.host.sys.Errno;
import dev.polystack.host.sys.Native;
import java.nio.charset.StandardCharsets;
import java.util.Optional;
import jnr.ffi.LibraryLoader;
import jnr.ffi.Pointer;
import jnr.ffi.Runtime;

/** Lazily loaded libbpf and the error vocabulary shared by this package. */
final class Bpf {
  /**
   * By soname: users have libbpf1 alone, without libbpf-dev's unversioned libbpf.so (jnr's
   * search for "bpf" happens to find libbpf.so.1 too, but the soname also pins the ABI major
   * this binding was written for).
   */
  static final String LIBRARY = "libbpf.so.1";

  static final String INSTALL_HINT = "libbpf is not installed: apt-get install libbpf1";

  private static final String[] LIBBPF_ERRORS = {
    "LIBBPF_ERRNO__LIBELF", "LIBBPF_ERRNO__FORMAT", "LIBBPF_ERRNO__KVERSION",
    "LIBBPF_ERRNO__ENDIAN", "LIBBPF_ERRNO__INTERNAL", "LIBBPF_ERRNO__RELOC",
    "LIBBPF_ERRNO__LOAD", "LIBBPF_ERRNO__VERIFY", "LIBBPF_ERRNO__PROG2BIG",
    "LIBBPF_ERRNO__KVER", "LIBBPF_ERRNO__PROGTYPE", "LIBBPF_ERRNO__WRNGPID",
    "LIBBPF_ERRNO__INVSEQ", "LIBBPF_ERRNO__NLPARSE"
  };
  private static final int LIBBPF_ERRNO_START = 4000;

  private Bpf() {}

  private static final class Holder {
    static final LibBpf LIB;
    static final String FAILURE;

    static {
      LibBpf lib = null;
      String failure = null;
      try {
        lib = LibraryLoader.create(LibBpf.class).failImmediately().load(LIBRARY);
        // libbpf prints to stderr by default; its lines are kept for our one-line errors.
        lib.libbpf_set_print(BpfLog.CALLBACK);
      } catch (LinkageError e) {
        lib = null;
        failure = e.getMessage();
      }
      LIB = lib;
      FAILURE = failure;
    }
  }

  /** Why libbpf could not be loaded, empty when it is usable. */
  static Optional<String> loadFailure() {
    return Optional.ofNullable(Holder.FAILURE);
  }

  /** The binding; callers check {@link #loadFailure()} first. */
  static LibBpf lib() {
    if (Holder.LIB == null) {
      throw new IllegalStateException(INSTALL_HINT);
    }
    return Holder.LIB;
  }

  static Runtime runtime() {
    return Runtime.getRuntime(lib());
  }

  /** errno saved by the most recent LibBpf call on this thread. */
  static int errno() {
    return runtime().getLastError();
  }

  static Pointer allocate(int bytes) {
    return Native.allocate(bytes);
  }

  /** "EPERM (operation not permitted)" for errno values and libbpf's own 4000+ codes. */
  static String describe(int error) {
    int e = Math.abs(error);
    if (e >= LIBBPF_ERRNO_START && e < LIBBPF_ERRNO_START + LIBBPF_ERRORS.length) {
      return LIBBPF_ERRORS[e - LIBBPF_ERRNO_START] + " (" + strerror(e) + ")";
    }
    if (e == UprobeLink.ENOTSUPP) {
      return "ENOTSUPP (operation not supported by the kernel)"; // kernel-internal, no libc name
    }
    String name = Errno.name(e);
    String text = Errno.text(e);
    return name + " (" + (text.equals("unknown error") ? strerror(e) : text) + ")";
  }

  private static String strerror(int error) {
    if (Holder.LIB == null) {
      return "unknown error";
    }
    Pointer buf = allocate(128);
    Holder.LIB.libbpf_strerror(error, buf, 128);
    return buf.getString(0, 128, StandardCharsets.UTF_8);
  }
}
