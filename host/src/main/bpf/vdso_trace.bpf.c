// SPDX-License-Identifier: GPL-2.0
/*
 * vDSO call tracing without stops: the handler of every execution breakpoint the BPF probe
 * backend opens (dev.polystack.host.probes.BpfProbeBackend). At a function's entry it keeps
 * the entry (time, arguments, return address) under the thread and stack pointer; at one of the
 * function's own ret instructions (where the stack pointer is back to the entry's) it takes
 * that entry, copies what the function wrote through its pointer arguments, and emits one
 * complete call into the ring buffer. The thread never stops. Which addresses are entries and
 * returns, and what to copy, is data the host puts into `sites` from the plug-in's plan: this
 * program knows no vDSO function. Every loss is a counter. Rebuild the committed object with
 * build.sh.
 *
 * No vmlinux.h, as tick_capture.bpf.c: only the uapi pt_regs layout is used.
 */
#include <linux/bpf.h>
#include <linux/bpf_perf_event.h>
#include <bpf/bpf_helpers.h>
#include "breakpoint_sigtrap.h"

#define MAX_COPIES 2
#define COPY_MAX 64
#define NARGS 6
#define USER_TOP (1ULL << 47)

enum { KIND_ENTRY = 1, KIND_RETURN = 2 };

enum { C_ENTRIES, C_RETURNS, C_RECORDS, C_RING_FULL, C_OUTPUT_UNREADABLE, C_UNPAIRED_RETURN,
       C_PENDING_FULL, C_ENTRY_REPLACED, C_RETURN_ADDRESS_UNREADABLE, C_NO_SITE,
       C_SIGTRAP_DELIVERED, C_EXEC, C_COUNT = 16 };


#define FLAG_RETURN_ADDRESS_UNREADABLE 1

struct copy {
	__u8 arg;	/* argument index 0..5 (rdi, rsi, rdx, rcx, r8, r9) */
	__u8 pad;
	__u16 len;	/* 1..COPY_MAX */
};

/* A breakpoint address: an entry, or one of its function's ret instructions. */
struct site {
	__u32 kind;
	__u32 ncopies;
	__u64 entry;	/* the function's entry address (for both kinds) */
	struct copy copies[MAX_COPIES];
};

struct pending_key {
	__u32 tid;
	__u32 pad;
	__u64 rsp;
};

struct pending {
	__u64 time_ns;
	__u64 entry;
	__u64 args[NARGS];
	__u64 return_address;
	__u32 flags;
	__u32 pad;
};

struct call {
	__u32 tgid, tid;
	__u64 entry_ns, return_ns;
	__u64 entry;		/* the function's entry address */
	__u64 ret;		/* the ret instruction that ended the call */
	__u64 args[NARGS];
	__u64 rsp;		/* at entry (= at the ret) */
	__u64 return_address;	/* read at entry from *rsp */
	__u64 rax;
	__u32 flags;
	__u16 copy_len[MAX_COPIES];	/* bytes copied; 0: null pointer or unreadable */
	__u8 data[MAX_COPIES][COPY_MAX];
};

_Static_assert(sizeof(struct call) == 248, "struct call is read by BpfProbeBackend");
_Static_assert(sizeof(struct pt_regs) == 168, "x86-64 pt_regs");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 256);
	__type(key, __u64);
	__type(value, struct site);
} sites SEC(".maps");

/* Sized by the host before load. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, struct pending_key);
	__type(value, struct pending);
} pending SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4 << 20);
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, C_COUNT);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

/* The traced processes (tgid -> 1), for vdso_sigtrap. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, __u8);
} targets SEC(".maps");

static __always_inline void count(__u32 index)
{
	__u64 *v = bpf_map_lookup_elem(&counters, &index);
	if (v)
		*v += 1;
}

static __always_inline void args_of(struct pt_regs *r, __u64 *a)
{
	a[0] = r->rdi;
	a[1] = r->rsi;
	a[2] = r->rdx;
	a[3] = r->rcx;
	a[4] = r->r8;
	a[5] = r->r9;
}

static __always_inline void on_entry(struct pt_regs *r, __u64 site_entry, __u32 tid)
{
	struct pending_key k = { .tid = tid, .rsp = r->rsp };
	struct pending p = {};
	count(C_ENTRIES);
	p.time_ns = bpf_ktime_get_ns();
	p.entry = site_entry;
	args_of(r, p.args);
	if (bpf_probe_read_user(&p.return_address, 8, (void *)r->rsp) != 0) {
		p.flags |= FLAG_RETURN_ADDRESS_UNREADABLE;
		count(C_RETURN_ADDRESS_UNREADABLE);
	}
	long err = bpf_map_update_elem(&pending, &k, &p, BPF_NOEXIST);
	if (err == -17 /* EEXIST */) {
		/* The same thread and stack depth entered before and never came back through a
		 * ret (longjmp out of a signal handler): that call is lost, this one replaces it. */
		count(C_ENTRY_REPLACED);
		err = bpf_map_update_elem(&pending, &k, &p, BPF_ANY);
	}
	if (err)
		count(C_PENDING_FULL);
}

static __always_inline void on_return(struct pt_regs *r, struct site *s, __u64 ip, __u64 pid_tgid)
{
	struct pending_key k = { .tid = (__u32)pid_tgid, .rsp = r->rsp };
	count(C_RETURNS);
	struct pending *p = bpf_map_lookup_elem(&pending, &k);
	if (!p || p->entry != s->entry) {
		count(C_UNPAIRED_RETURN); /* entered before the session, or at another depth */
		return;
	}
	struct call *c = bpf_ringbuf_reserve(&events, sizeof(struct call), 0);
	if (!c) {
		count(C_RING_FULL);
		bpf_map_delete_elem(&pending, &k);
		return;
	}
	c->tgid = pid_tgid >> 32;
	c->tid = (__u32)pid_tgid;
	c->entry_ns = p->time_ns;
	c->return_ns = bpf_ktime_get_ns();
	c->entry = p->entry;
	c->ret = ip;
	for (int i = 0; i < NARGS; i++)
		c->args[i] = p->args[i];
	c->rsp = r->rsp;
	c->return_address = p->return_address;
	c->rax = r->rax;
	c->flags = p->flags;
	for (int i = 0; i < MAX_COPIES; i++) {
		c->copy_len[i] = 0;
		if (i >= s->ncopies)
			continue;
		__u8 arg = s->copies[i].arg;
		__u32 len = s->copies[i].len;
		if (arg >= NARGS || len == 0 || len > COPY_MAX)
			continue;
		__u64 ptr = p->args[arg];
		if (ptr == 0 || ptr >= USER_TOP)
			continue;
		if (bpf_probe_read_user(c->data[i], len, (void *)ptr) == 0)
			c->copy_len[i] = len;
		else
			count(C_OUTPUT_UNREADABLE);
	}
	bpf_map_delete_elem(&pending, &k);
	/*
	 * No wake-up per call: an irq_work and a context switch cost more than the two traps
	 * (figures: docs/benchmarks.md, "Figures behind the code's choices"). The reader polls on
	 * a timer; the kernel wakes it early only once the ring is a quarter full.
	 */
	__u64 wake = bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) >=
			     bpf_ringbuf_query(&events, BPF_RB_RING_SIZE) / 4
		     ? BPF_RB_FORCE_WAKEUP
		     : BPF_RB_NO_WAKEUP;
	bpf_ringbuf_submit(c, wake);
	count(C_RECORDS);
}

SEC("perf_event")
int vdso_probe(struct bpf_perf_event_data *ctx)
{
	struct pt_regs *r = (struct pt_regs *)&ctx->regs;
	__u64 ip = r->rip;
	struct site *s = bpf_map_lookup_elem(&sites, &ip);
	if (!s) {
		count(C_NO_SITE);
		return 0;
	}
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	if (s->kind == KIND_ENTRY)
		on_entry(r, s->entry, (__u32)pid_tgid);
	else if (s->kind == KIND_RETURN)
		on_return(r, s, ip, pid_tgid);
	/* 0: nothing goes to a perf ring; the events have none anyway. */
	return 0;
}

/* Counts the breakpoint SIGTRAPs raised in a target (breakpoint_sigtrap.h says why). */
SEC("raw_tracepoint/signal_generate")
int vdso_sigtrap(struct bpf_raw_tracepoint_args *ctx)
{
	if (!breakpoint_sigtrap(ctx))
		return 0;
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	if (bpf_map_lookup_elem(&targets, &tgid))
		count(C_SIGTRAP_DELIVERED);
	return 0;
}

/*
 * Counts execs in a traced process: exec removes its breakpoints (remove_on_exec, the old vDSO
 * is gone) and the host re-arms at the new vDSO once it sees this count move; calls the new
 * image makes before that are not traced, and the summary says an exec happened.
 */
SEC("raw_tracepoint/sched_process_exec")
int vdso_exec(struct bpf_raw_tracepoint_args *ctx)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	if (bpf_map_lookup_elem(&targets, &tgid))
		count(C_EXEC);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
