package dev.polystack.host.launch;

import dev.polystack.host.sys.Errno;
import dev.polystack.host.sys.Native;
import java.util.Objects;
import java.lang.ref.Reference;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.function.Function;
import jnr.ffi.LibraryLoader;
import jnr.ffi.Pointer;

/** Users and groups from the system's name service (getpwnam_r and friends). */
public final class Accounts {
  private Accounts() {}

  /** glibc x86-64 {@code struct passwd}: name, passwd, uid, gid, gecos, dir, shell. */
  private static final int PASSWD_BYTES = 48;
  private static final int PW_UID = 16;
  private static final int PW_GID = 20;
  private static final int PW_DIR = 32;
  /** glibc x86-64 {@code struct group}: name, passwd, gid, members. */
  private static final int GROUP_BYTES = 32;
  private static final int GR_GID = 16;
  /** Entries beyond this (a group with thousands of members) are treated as unreadable. */
  private static final int MAX_BUFFER = 1 << 20;

  /** A password-database entry. */
  public record User(String name, int uid, int gid, String home) {
    public User {
      Objects.requireNonNull(name, "name");
      Objects.requireNonNull(home, "home");
    }
  }

  private static final class Holder {
    static final AccountsLib LIB = LibraryLoader.create(AccountsLib.class).load("c");
  }

  private interface Lookup {
    int call(Pointer entry, Pointer buf, long size, Pointer result);
  }

  public static Optional<User> userByName(String name) {
    return lookup(PASSWD_BYTES, (e, b, n, r) -> Holder.LIB.getpwnam_r(name, e, b, n, r),
        Accounts::user);
  }

  public static Optional<User> userById(int uid) {
    return lookup(PASSWD_BYTES, (e, b, n, r) -> Holder.LIB.getpwuid_r(uid, e, b, n, r),
        Accounts::user);
  }

  public static OptionalInt groupByName(String name) {
    return lookup(GROUP_BYTES, (e, b, n, r) -> Holder.LIB.getgrnam_r(name, e, b, n, r),
        g -> g.getInt(GR_GID)).map(OptionalInt::of).orElse(OptionalInt.empty());
  }

  public static boolean groupExists(int gid) {
    return lookup(GROUP_BYTES, (e, b, n, r) -> Holder.LIB.getgrgid_r(gid, e, b, n, r),
        g -> g.getInt(GR_GID)).isPresent();
  }

  /** The effective user id of this process. */
  public static int effectiveUid() {
    return Holder.LIB.geteuid();
  }

  private static User user(Pointer pw) {
    return new User(string(pw, 0), pw.getInt(PW_UID), pw.getInt(PW_GID), string(pw, PW_DIR));
  }

  private static String string(Pointer struct, long offset) {
    Pointer p = struct.getPointer(offset);
    return p == null ? "" : p.getString(0);
  }

  /**
   * Runs one {@code *_r} lookup and reads the entry with {@code read} while its string buffer
   * is still alive; empty when there is no entry (or it cannot be read).
   */
  private static <T> Optional<T> lookup(int entryBytes, Lookup call, Function<Pointer, T> read) {
    Pointer entry = Native.allocate(entryBytes);
    Pointer result = Native.allocate(8);
    for (int size = 4096; size <= MAX_BUFFER; size *= 4) {
      Pointer buf = Native.allocate(size);
      result.putLong(0, 0);
      int rc = call.call(entry, buf, size, result);
      if (rc == Errno.ERANGE) {
        continue;
      }
      if (rc != 0 || result.getLong(0) == 0) {
        return Optional.empty();
      }
      try {
        return Optional.of(read.apply(entry));
      } finally {
        Reference.reachabilityFence(buf); // the entry's strings point into buf
      }
    }
    return Optional.empty();
  }
}
