package dev.polystack.host.launch;

import jnr.ffi.Pointer;

/**
 * The glibc name-service lookups {@link Accounts} needs (so NSS sources such as LDAP count, not
 * only /etc/passwd). Public only because jnr generates the implementation in its own class
 * loader; use {@link Accounts}.
 */
public interface AccountsLib {
  int getpwnam_r(String name, Pointer pwd, Pointer buf, long buflen, Pointer result);

  int getpwuid_r(int uid, Pointer pwd, Pointer buf, long buflen, Pointer result);

  int getgrnam_r(String name, Pointer grp, Pointer buf, long buflen, Pointer result);

  int getgrgid_r(int gid, Pointer grp, Pointer buf, long buflen, Pointer result);

  int geteuid();
}
