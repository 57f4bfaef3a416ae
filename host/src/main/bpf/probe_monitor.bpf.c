// SPDX-License-Identifier: GPL-2.0
/*
 * Probe monitors (`polystack probe`): one program on uprobe session links (BPF_LINK_CREATE,
 * attach type BPF_TRACE_UPROBE_SESSION, made by the host), the link cookie is the site index.
 * The common monitors run here, with no trip to user space per hit:
 *   count   - hits[site] += 1 at entry; the entry returns 1, so no return probe is armed.
 *   latency - the entry keeps bpf_ktime_get_ns() in the session cookie and returns 0; the
 *             return adds the duration to hist[site] (log2 buckets, LatencyStats.bucket).
 *   args    - one ring record per hit: rdi..r9 at entry, rax at a %return site's return;
 *             hits[site] counts them too, so a full ring loses records, not counts. A
 *             %return site keeps the entry's registers in entry_args until its return, whose
 *             record then carries them (REC_ARGS) with the return's time and the duration.
 * --per-thread adds a (site, tid) entry in a bounded hash; a full table is counted, as is every
 * record the ring cannot take. Layouts and costs: docs/probes.md. Rebuild with build.sh.
 *
 * Hardware-breakpoint sites (`probe --hw`) run probe_monitor_hw instead: the handler of execution
 * breakpoints and of read/write watchpoints (runtime sites: a Lua function's first bytecode,
 * count only) (perf events, PERF_EVENT_IOC_SET_BPF), with the same monitors over the same maps;
 * the site is found by the breakpoint's address (hw_sites), as a perf event handler has no attach
 * cookie. A site whose return is watched has a breakpoint at its entry (HW_CALL: the call's time
 * and registers kept under the thread and stack pointer) and one at each of its own ret
 * instructions (HW_RET: the stack pointer is back to the entry's, which finds the call).
 * probe_sigtrap counts the SIGTRAPs the kernel raises in the target for a breakpoint
 * (docs/vdso.md, "Stray SIGTRAPs").
 *
 * No vmlinux.h, as tick_capture.bpf.c: only the uapi pt_regs layout is used.
 */
#include <linux/bpf.h>
#include <linux/ptrace.h>
#include <linux/bpf_perf_event.h>
#include <bpf/bpf_helpers.h>
#include "breakpoint_sigtrap.h"

extern __u64 *bpf_session_cookie(void) __ksym;
extern _Bool bpf_session_is_return(void) __ksym;

#define MAX_SITES 64
#define BUCKETS 64
/* Per site in hist: the 64 buckets, then the sum of durations and the largest one. */
#define HIST_SLOTS (BUCKETS + 2)
#define THREADS 4096
/* Calls of %return args sites in flight whose entry registers are kept. */
#define IN_FLIGHT 8192

enum { MON_COUNT = 1, MON_LATENCY = 2, MON_ARGS = 3 };
enum { CFG_PER_THREAD = 1 };
enum { SITE_RETURN = 1 };
enum { REC_RETURN = 1, REC_ARGS = 2 };

enum { C_ENTRIES, C_RETURNS, C_RECORDS, C_RING_FULL, C_THREAD_TABLE_FULL, C_RETURN_UNMATCHED,
       C_NO_SITE, C_RETURN_ARGS_LOST, C_SIGTRAP_DELIVERED, C_COUNT = 16 };


struct config {
	__u32 monitor;
	__u32 flags;
};

struct site {
	__u32 flags;
	__u32 pad;
};

struct thread_key {
	__u32 site;
	__u32 tid;
};

struct thread_stats {
	__u64 calls;
	__u64 sum_ns;
	__u64 max_ns;
	__u64 buckets[BUCKETS];
};

/* args monitor: one hit. */
struct arg_record {
	__u32 tgid, tid;
	__u64 time_ns;		/* bpf_ktime_get_ns() at the hit: the entry, or the return */
	__u32 site;
	__u32 flags;		/* REC_RETURN: at the return, rax valid, duration_ns set;
				 * REC_ARGS: args are the entry's registers */
	__u64 args[6];		/* rdi, rsi, rdx, rcx, r8, r9 at entry */
	__u64 rax;
	__u64 duration_ns;
};

/* A %return args call in flight: its thread and entry time (the session cookie). */
struct call_key {
	__u32 tid;
	__u32 pad;
	__u64 entry_ns;
};

struct entry_regs {
	__u64 args[6];
};

_Static_assert(sizeof(struct arg_record) == 88, "arg_record is read by ProbeMonitor");
_Static_assert(sizeof(struct thread_stats) == 536, "thread_stats is read by ProbeMonitor");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct config);
} config SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_SITES);
	__type(key, __u32);
	__type(value, struct site);
} sites SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, MAX_SITES);
	__type(key, __u32);
	__type(value, __u64);
} hits SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, MAX_SITES * HIST_SLOTS);
	__type(key, __u32);
	__type(value, __u64);
} hist SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, THREADS);
	__type(key, struct thread_key);
	__type(value, struct thread_stats);
} threads SEC(".maps");

/* LRU: entries of calls that never return (longjmp, thread exit) are evicted, not leaked; a
 * return whose entry was evicted is counted as C_RETURN_ARGS_LOST. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, IN_FLIGHT);
	__type(key, struct call_key);
	__type(value, struct entry_regs);
} entry_args SEC(".maps");

/* Never written: the zeroes a new threads entry starts from (too large for the BPF stack). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct thread_stats);
} thread_zero SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, C_COUNT);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

enum { HW_ENTRY = 0, HW_CALL = 1, HW_RET = 2 };

struct hw_site {
	__u32 site;
	__u32 kind;	/* HW_* */
};

/* A call in flight at a hardware site whose return is watched. */
struct hw_call_key {
	__u32 tid;
	__u32 pad;
	__u64 rsp;
};

struct hw_call {
	__u64 entry_ns;
	__u64 args[6];
	__u32 site;
	__u32 pad;
};

/* Hardware-breakpoint sites: the breakpoint's address -> its site and kind. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_SITES);
	__type(key, __u64);
	__type(value, struct hw_site);
} hw_sites SEC(".maps");

/* LRU, as entry_args: calls that never return are evicted, not leaked. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, IN_FLIGHT);
	__type(key, struct hw_call_key);
	__type(value, struct hw_call);
} hw_calls SEC(".maps");

/* Processes with hardware-breakpoint sites (tgid -> 1), for probe_sigtrap. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, __u8);
} hw_targets SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4 << 20);
} events SEC(".maps");

/* Added atomically: a per-CPU slot is still shared by threads that preempt each other on it
 * (uprobe programs run with migration, not preemption, disabled), and counts must be exact. */
static __always_inline void add(void *map, __u32 key, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(map, &key);

	if (v)
		__sync_fetch_and_add(v, n);
}

static __always_inline void count(__u32 c)
{
	add(&counters, c, 1);
}

/* floor(log2(d)), 0 for d <= 1: LatencyStats.bucket, without a clz instruction. */
static __always_inline __u32 bucket(__u64 d)
{
	__u32 b = 0;

	if (d >> 32) { d >>= 32; b += 32; }
	if (d >> 16) { d >>= 16; b += 16; }
	if (d >> 8) { d >>= 8; b += 8; }
	if (d >> 4) { d >>= 4; b += 4; }
	if (d >> 2) { d >>= 2; b += 2; }
	if (d >> 1) { b += 1; }
	return b;
}

/* The (site, tid) entry, made on first use; null and counted when the table is full. */
static __always_inline struct thread_stats *thread_of(__u32 site, __u32 tid)
{
	struct thread_key k = { .site = site, .tid = tid };
	struct thread_stats *t = bpf_map_lookup_elem(&threads, &k);

	if (t)
		return t;
	__u32 z = 0;
	struct thread_stats *zero = bpf_map_lookup_elem(&thread_zero, &z);
	if (!zero)
		return 0;
	if (bpf_map_update_elem(&threads, &k, zero, BPF_NOEXIST) &&
	    !bpf_map_lookup_elem(&threads, &k)) {
		count(C_THREAD_TABLE_FULL);
		return 0;
	}
	return bpf_map_lookup_elem(&threads, &k);
}

static __always_inline void hit(__u32 site, __u32 tid, struct config *cfg)
{
	add(&hits, site, 1);
	if (cfg->flags & CFG_PER_THREAD) {
		struct thread_stats *t = thread_of(site, tid);
		if (t)
			__sync_fetch_and_add(&t->calls, 1);
	}
}

static __always_inline void timed(__u32 site, __u32 tid, __u64 d, struct config *cfg)
{
	__u32 b = bucket(d);

	add(&hits, site, 1);
	add(&hist, site * HIST_SLOTS + b, 1);
	add(&hist, site * HIST_SLOTS + BUCKETS, d);
	__u32 mk = site * HIST_SLOTS + BUCKETS + 1;
	__u64 *max = bpf_map_lookup_elem(&hist, &mk);
	if (max && *max < d)
		*max = d; /* per CPU; a lost race only lowers one CPU's maximum */
	if (cfg->flags & CFG_PER_THREAD) {
		struct thread_stats *t = thread_of(site, tid);
		if (t) {
			__sync_fetch_and_add(&t->calls, 1);
			__sync_fetch_and_add(&t->sum_ns, d);
			if (t->max_ns < d)
				t->max_ns = d;
			if (b < BUCKETS)
				__sync_fetch_and_add(&t->buckets[b], 1);
		}
	}
}

static __always_inline void record(struct pt_regs *ctx, __u32 site, __u32 tgid, __u32 tid,
				   __u32 flags, __u64 time, __u64 duration,
				   const struct entry_regs *regs)
{
	struct arg_record r = {
		.tgid = tgid,
		.tid = tid,
		.time_ns = time,
		.site = site,
		.flags = flags,
		.rax = ctx->rax,
		.duration_ns = duration,
	};

	if (regs) {
		r.args[0] = regs->args[0];
		r.args[1] = regs->args[1];
		r.args[2] = regs->args[2];
		r.args[3] = regs->args[3];
		r.args[4] = regs->args[4];
		r.args[5] = regs->args[5];
		r.flags |= REC_ARGS;
	}
	__u64 wake = bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) >=
			     bpf_ringbuf_query(&events, BPF_RB_RING_SIZE) / 4
		     ? BPF_RB_FORCE_WAKEUP
		     : BPF_RB_NO_WAKEUP;

	add(&hits, site, 1); /* counted whether or not the ring takes the record */
	if (bpf_ringbuf_output(&events, &r, sizeof(r), wake))
		count(C_RING_FULL);
	else
		count(C_RECORDS);
}

SEC("uprobe")
int probe_monitor(struct pt_regs *ctx)
{
	__u32 zero = 0;
	struct config *cfg = bpf_map_lookup_elem(&config, &zero);
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, tid = (__u32)id;
	__u32 site = (__u32)bpf_get_attach_cookie(ctx);
	struct site *s = bpf_map_lookup_elem(&sites, &site);

	if (!cfg || !s || site >= MAX_SITES) {
		count(C_NO_SITE);
		return 1;
	}
	int at_return = s->flags & SITE_RETURN;

	if (!bpf_session_is_return()) {
		count(C_ENTRIES);
		if (cfg->monitor == MON_LATENCY || at_return) {
			__u64 *cookie = bpf_session_cookie();
			__u64 now = bpf_ktime_get_ns();
			if (cookie)
				*cookie = now;
			if (cookie && cfg->monitor == MON_ARGS) {
				struct call_key k = { .tid = tid, .entry_ns = now };
				struct entry_regs regs = { .args = { ctx->rdi, ctx->rsi, ctx->rdx,
								     ctx->rcx, ctx->r8, ctx->r9 } };
				bpf_map_update_elem(&entry_args, &k, &regs, BPF_ANY);
			}
			return 0; /* arms this call's return probe */
		}
		if (cfg->monitor == MON_ARGS) {
			struct entry_regs regs = { .args = { ctx->rdi, ctx->rsi, ctx->rdx, ctx->rcx,
							     ctx->r8, ctx->r9 } };
			record(ctx, site, tgid, tid, 0, bpf_ktime_get_ns(), 0, &regs);
		} else
			hit(site, tid, cfg);
		return 1; /* no return probe for this call */
	}

	count(C_RETURNS);
	__u64 *cookie = bpf_session_cookie();
	if (!cookie || !*cookie) {
		count(C_RETURN_UNMATCHED);
		return 0;
	}
	__u64 now = bpf_ktime_get_ns();
	__u64 d = now - *cookie;
	if (cfg->monitor == MON_LATENCY) {
		timed(site, tid, d, cfg);
	} else if (cfg->monitor == MON_ARGS) {
		struct call_key k = { .tid = tid, .entry_ns = *cookie };
		struct entry_regs *regs = bpf_map_lookup_elem(&entry_args, &k);
		struct entry_regs copy;

		if (regs) {
			copy = *regs;
			bpf_map_delete_elem(&entry_args, &k);
			record(ctx, site, tgid, tid, REC_RETURN, now, d, &copy);
		} else {
			count(C_RETURN_ARGS_LOST);
			record(ctx, site, tgid, tid, REC_RETURN, now, d, 0);
		}
	} else {
		hit(site, tid, cfg);
	}
	return 0;
}

/*
 * An execution breakpoint fired (the instruction has not run yet). Returns 0: nothing goes to a
 * perf ring (the events have none), and no signal is sent (no sigtrap).
 */
SEC("perf_event")
int probe_monitor_hw(struct bpf_perf_event_data *ctx)
{
	struct pt_regs *r = (struct pt_regs *)&ctx->regs;
	__u32 zero = 0;
	struct config *cfg = bpf_map_lookup_elem(&config, &zero);
	/* The breakpoint's own address (perf_bp_event puts bp_addr in the sample): the rip of an
	 * execution breakpoint, the watched datum of a data watchpoint (runtime sites), whose rip
	 * is the instruction after the access. */
	__u64 at = ctx->addr;
	struct hw_site *s = bpf_map_lookup_elem(&hw_sites, &at);
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id;

	if (!cfg || !s || s->site >= MAX_SITES) {
		count(C_NO_SITE);
		return 0;
	}
	__u32 site = s->site;
	struct hw_call_key k = { .tid = tid, .rsp = r->rsp };

	if (s->kind == HW_RET) {
		count(C_RETURNS);
		struct hw_call *c = bpf_map_lookup_elem(&hw_calls, &k);
		if (!c || c->site != site) {
			/* entered before the run, or its entry was evicted */
			count(C_RETURN_UNMATCHED);
			return 0;
		}
		struct entry_regs regs = { .args = { c->args[0], c->args[1], c->args[2],
						     c->args[3], c->args[4], c->args[5] } };
		__u64 now = bpf_ktime_get_ns();
		__u64 d = now - c->entry_ns;
		bpf_map_delete_elem(&hw_calls, &k);
		if (cfg->monitor == MON_LATENCY)
			timed(site, tid, d, cfg);
		else if (cfg->monitor == MON_ARGS)
			record(r, site, id >> 32, tid, REC_RETURN, now, d, &regs);
		else
			hit(site, tid, cfg);
		return 0;
	}
	count(C_ENTRIES);
	if (s->kind == HW_CALL) {
		struct hw_call c = { .entry_ns = bpf_ktime_get_ns(), .site = site,
				     .args = { r->rdi, r->rsi, r->rdx, r->rcx, r->r8, r->r9 } };
		bpf_map_update_elem(&hw_calls, &k, &c, BPF_ANY);
		return 0;
	}
	if (cfg->monitor == MON_ARGS) {
		struct entry_regs regs = { .args = { r->rdi, r->rsi, r->rdx, r->rcx, r->r8,
						     r->r9 } };
		record(r, site, id >> 32, tid, 0, bpf_ktime_get_ns(), 0, &regs);
	} else
		hit(site, tid, cfg);
	return 0;
}

/* Counts the breakpoint SIGTRAPs raised in a target (breakpoint_sigtrap.h says why). */
SEC("raw_tracepoint/signal_generate")
int probe_sigtrap(struct bpf_raw_tracepoint_args *ctx)
{
	if (!breakpoint_sigtrap(ctx))
		return 0;
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	if (bpf_map_lookup_elem(&hw_targets, &tgid))
		count(C_SIGTRAP_DELIVERED);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
