// SPDX-License-Identifier: GPL-2.0
/*
 * The BPF handler of bench/vdso-bpf-floor.c: the work of polystack's vdso_trace.bpf.c in its
 * plainest form, for one function with one output. At the entry breakpoint: keep time, the six
 * argument registers and the return address under (tid, rsp). At a ret breakpoint: take that
 * entry, copy 16 bytes from the second argument (the timespec), emit one record, count what
 * was lost. The entry address comes from the loader (.rodata).
 */
#include <linux/bpf.h>
#include <linux/bpf_perf_event.h>
#include <bpf/bpf_helpers.h>

const volatile __u64 entry_ip;

struct key { __u32 tid; __u32 pad; __u64 rsp; };
struct pend { __u64 t; __u64 args[6]; __u64 ra; };
struct rec { __u32 tgid, tid; __u64 t0, t1, args[6], rsp, ra, rax; __u8 out[16]; };

struct { __uint(type, BPF_MAP_TYPE_HASH); __uint(max_entries, 16384);
	 __type(key, struct key); __type(value, struct pend); } pending SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_RINGBUF); __uint(max_entries, 4 << 20); } ring SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, 4);
	 __type(key, __u32); __type(value, __u64); } lost SEC(".maps");

static __always_inline void count(__u32 i)
{
	__u64 *v = bpf_map_lookup_elem(&lost, &i);
	if (v)
		__sync_fetch_and_add(v, 1);
}

SEC("perf_event")
int floor_probe(struct bpf_perf_event_data *ctx)
{
	struct pt_regs *r = (struct pt_regs *)&ctx->regs;
	__u64 id = bpf_get_current_pid_tgid();
	struct key k = { .tid = (__u32)id, .rsp = r->rsp };
	if (r->rip == entry_ip) {
		struct pend p = { .t = bpf_ktime_get_ns(),
			.args = { r->rdi, r->rsi, r->rdx, r->rcx, r->r8, r->r9 } };
		bpf_probe_read_user(&p.ra, 8, (void *)r->rsp);
		if (bpf_map_update_elem(&pending, &k, &p, BPF_ANY))
			count(2);
		return 0;
	}
	struct pend *p = bpf_map_lookup_elem(&pending, &k);
	if (!p) {
		count(1); /* unpaired return */
		return 0;
	}
	struct rec *e = bpf_ringbuf_reserve(&ring, sizeof(*e), 0);
	if (!e) {
		count(0); /* ring full */
		bpf_map_delete_elem(&pending, &k);
		return 0;
	}
	e->tgid = id >> 32;
	e->tid = (__u32)id;
	e->t0 = p->t;
	e->t1 = bpf_ktime_get_ns();
	for (int i = 0; i < 6; i++)
		e->args[i] = p->args[i];
	e->rsp = r->rsp;
	e->ra = p->ra;
	e->rax = r->rax;
	if (bpf_probe_read_user(e->out, 16, (void *)p->args[1]))
		count(3);
	bpf_map_delete_elem(&pending, &k);
	/*
	 * No wake-up per call: waking the reader for every record cost ~35 us a call here (an
	 * irq_work and a context switch on a 2-vCPU VM, more than the two traps). The reader polls
	 * every 10 ms; the kernel wakes it early only once the ring is a quarter full.
	 */
	__u64 wake = bpf_ringbuf_query(&ring, BPF_RB_AVAIL_DATA) >=
			     bpf_ringbuf_query(&ring, BPF_RB_RING_SIZE) / 4
		     ? BPF_RB_FORCE_WAKEUP
		     : BPF_RB_NO_WAKEUP;
	bpf_ringbuf_submit(e, wake);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
