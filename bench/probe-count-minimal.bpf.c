// SPDX-License-Identifier: GPL-2.0
/* The least a counting probe does, for docs/benchmarks.md ("Probe monitors"): one per-CPU
 * counter bumped per hit, returning 1 (on a session link: no return probe).
 * bench/probe-count-minimal.c attaches it. */
#include <linux/bpf.h>
#include <linux/ptrace.h>
#include <bpf/bpf_helpers.h>

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} hits SEC(".maps");

SEC("uprobe")
int count_probe(struct pt_regs *ctx)
{
	__u32 zero = 0;
	__u64 *n = bpf_map_lookup_elem(&hits, &zero);

	if (n)
		*n += 1;
	return 1;
}

char LICENSE[] SEC("license") = "GPL";
