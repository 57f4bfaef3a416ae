package dev.polystack.host.sys;

import jnr.ffi.Pointer;
import jnr.ffi.annotations.Out;
import jnr.ffi.annotations.SaveError;

/**
 * Raw jnr-ffi binding to the glibc entry points polystack needs. Internal: callers outside
 * {@code dev.polystack.host} should use the typed wrappers ({@code Tracer}, {@code ProcessMemory},
 * {@code PerfEvent}, {@code Launcher}). Public only because jnr generates the implementation in its
 * own class loader and the other host packages bind through it.
 *
 * <p>Every method saves errno so {@link Native#errno()} reads the value left by this call on this
 * thread, not one clobbered by JVM-internal libc use in between.
 */
@SaveError
public interface LibC {
  long ptrace(int request, int pid, long addr, long data);

  int waitpid(int pid, @Out int[] status, int options);

  // Declared with six syscall arguments (seven native ones). Native functions with exactly six
  // all-primitive arguments received garbage in the sixth (r9) through jnr/jffi 2.2.17 / 1.3.13
  // here (strace showed bogus perf_event_open flags and mmap offsets), so mmap and
  // process_vm_readv are also issued through this entry point rather than bound directly.
  long syscall(long number, long a1, long a2, long a3, long a4, long a5, long a6);

  int munmap(long addr, long length);

  int ioctl(int fd, long request, long arg);

  int close(int fd);

  int isatty(int fd);

  int tcgetattr(int fd, Pointer termios);

  int tcsetattr(int fd, int optionalActions, Pointer termios);

  int tcgetpgrp(int fd);

  int getpgrp();

  long read(int fd, Pointer buf, long count);

  int poll(Pointer fds, long nfds, int timeoutMillis);

  int kill(int pid, int signal);

  /** glibc's signal(3); the handler and the result are addresses (0 SIG_DFL, 1 SIG_IGN). */
  long signal(int signal, long handler);

  int posix_spawnp(
      @Out int[] pid, String file, Pointer fileActions, Pointer attr, Pointer argv, Pointer envp);

  int posix_spawn_file_actions_init(Pointer actions);

  int posix_spawn_file_actions_addopen(
      Pointer actions, int fd, String path, int flags, int mode);

  int posix_spawn_file_actions_adddup2(Pointer actions, int fd, int newFd);

  int posix_spawn_file_actions_destroy(Pointer actions);

  int posix_spawnattr_init(Pointer attr);

  int posix_spawnattr_setflags(Pointer attr, short flags);

  int posix_spawnattr_setsigmask(Pointer attr, Pointer sigset);

  int posix_spawnattr_setsigdefault(Pointer attr, Pointer sigset);

  int posix_spawnattr_destroy(Pointer attr);

  int sigemptyset(Pointer set);

  int sigaddset(Pointer set, int signal);

  int pthread_sigmask(int how, Pointer set, Pointer oldSet);

  /** glibc's malloc_trim(3): returns free memory of every malloc arena to the kernel. */
  int malloc_trim(long pad);
}
