/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Shared by the programs that arm hardware breakpoints (vdso_trace, probe_monitor): whether a
 * signal_generate raw tracepoint is the SIGTRAP (TRAP_BRKPT) the kernel raises for a breakpoint.
 * On some VMs a breakpoint's #DB occasionally arrives with DR6 reading 0; the kernel takes it for
 * an icebp and sends SIGTRAP at the breakpoint's address, which kills a process that keeps
 * SIGTRAP's default action (docs/vdso.md, "Stray SIGTRAPs"). Nothing but a ptrace tracer can stop
 * that signal; counting it makes it visible. The signal is raised in the task's own context
 * (force_sig_fault), so current is the target.
 */
#ifndef POLYSTACK_BREAKPOINT_SIGTRAP_H
#define POLYSTACK_BREAKPOINT_SIGTRAP_H

#define SIGTRAP 5
#define TRAP_BRKPT 1

static __always_inline int breakpoint_sigtrap(struct bpf_raw_tracepoint_args *ctx)
{
	if ((int)ctx->args[0] != SIGTRAP)
		return 0;
	int code = 0;
	/* struct kernel_siginfo: si_signo, si_errno, si_code */
	return bpf_probe_read_kernel(&code, sizeof(code), (void *)(ctx->args[1] + 8)) == 0
	       && code == TRAP_BRKPT;
}

#endif
