package dev.polystack.host.ptrace;

import dev.polystack.host.sys.SyscallException;

/** Work that runs on a {@link Tracer}'s thread with access to the thread-confined {@link Ptrace}. */
@FunctionalInterface
public interface PtraceTask<T> {
  T run(Ptrace ptrace) throws SyscallException;
}
