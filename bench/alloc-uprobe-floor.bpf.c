// SPDX-License-Identifier: GPL-2.0
/* The floor of a probed allocator call, for docs/allocations.md: a uprobe session program that
 * only returns 1 (no return probe). bench/alloc-uprobe-floor.c attaches it. */
#include <linux/bpf.h>
#include <linux/ptrace.h>
#include <bpf/bpf_helpers.h>

SEC("uprobe")
int floor_probe(struct pt_regs *ctx)
{
	return 1;
}

char LICENSE[] SEC("license") = "GPL";
