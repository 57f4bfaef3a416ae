// SPDX-License-Identifier: GPL-2.0
/*
 * Tick-time capture for polystack: at every tick of a target process's threads, their user
 * registers, stack and the regions of their capture plans, into a ring buffer. The layouts it
 * shares with the host (maps, struct plan, records) are in docs/capture-plans.md;
 * dev.polystack.host.bpf.TickCapture loads it. Rebuild the committed object with build.sh.
 *
 * No vmlinux.h on purpose: the program touches no kernel struct through BTF (only the uapi
 * pt_regs layout, which is ABI), so the object does not depend on the build machine's kernel.
 */
#include <linux/bpf.h>
#include <linux/bpf_perf_event.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

#define RECORD_MAX 65536
#define PAGE 4096
/*
 * The verifier cannot relate a write offset to a length clipped against the space left, so each
 * write is bounded separately (offset <= RECORD_MAX, length <= PAGE). The page past RECORD_MAX
 * makes that provably safe; records never use it. Plan state lives at its start.
 */
#define SCRATCH_SIZE (RECORD_MAX + PAGE)
#define STACK_MAX 32768
#define RED_ZONE 128
#define COPY_MAX 16384
#define CHAIN_COPY_MAX 4096
#define MAX_HOPS 16
#define MAX_SCALE 4096
/* Enough page-aligned chunks for STACK_MAX bytes from an unaligned start. */
#define MAX_CHUNKS (STACK_MAX / PAGE + 1)
#define MAX_PLANS 4
#define MAX_STEPS 48
#define NSLOTS 8
#define NREGS 17
#define USER_TOP (1ULL << 47)
#define NONE 0xff

enum { R_RAX, R_RDX, R_RCX, R_RBX, R_RSI, R_RDI, R_RBP, R_RSP,
       R_R8, R_R9, R_R10, R_R11, R_R12, R_R13, R_R14, R_R15, R_RIP };

enum { C_TICKS, C_RECORDS, C_RING_FULL, C_NO_USER_REGS, C_STACK_UNREADABLE, C_PLAN_LOAD_FAILED,
       C_PLAN_CHECK_FAILED, C_COPY_FAILED, C_COPY_PARTIAL, C_RECORD_FULL, C_PLAN_INVALID,
       C_EVENTS, C_EVENT_RING_FULL, C_FOLLOWED, C_FOLLOW_FULL, C_ALLOC_CALLS, C_ALLOC_SAMPLED,
       C_ALLOC_INTERNAL_CALL, C_ALLOC_DEFINITION_SENT, C_ALLOC_DEFINITION_DEDUPLICATED,
       C_ALLOC_DEFINITION_UNDEDUPLICATED, C_ALLOC_DEFINITION_LOST, C_ALLOC_EVENT_RING_FULL,
       C_INUSE_MAP_FULL, C_FREE_MATCHED, C_ALLOC_INTERVAL_CLAMPED, C_ALLOC_RETURN_UNMATCHED,
       C_CHAIN_NEXT_UNREADABLE, C_THREAD_EXITING, C_COUNT = 32 };

enum { OP_REG = 1, OP_CONST, OP_ADD, OP_SUB, OP_MAX, OP_MIN, OP_LOAD, OP_IN_RANGE_OR,
       OP_CHECK_EQ, OP_CHECK_NE, OP_AND, OP_COPY, OP_TP, OP_SHL, OP_SHR, OP_MUL, OP_ADD_SLOTS,
       OP_LOAD_INDEXED, OP_CHAIN, OP_TID };

enum { STOP_LOAD = 1, STOP_CHECK = 2, STOP_INVALID = 3 };

#define FLAG_IN_KERNEL 1
/* A v1 record that defines an allocation stack: reserved carries its digest (alloc_probe.h). */
#define FLAG_STACK_DEFINITION 2
/* A tick record whose reserved field carries the thread pointer (x86-64: the FS base). */
#define FLAG_THREAD_POINTER 4

/* struct target flags: also capture the processes this one creates (set on them in turn). */
#define TARGET_FOLLOW 1

struct target {
	__u32 stack_bytes;
	__u32 flags;
};

/* settings flags: every user process is a target (the host-wide agent); pids are those of the
 * pid namespace ns_dev/ns_ino (polystack inside a container), not the kernel's. */
#define SETTINGS_ALL 1
#define SETTINGS_PIDNS 2
/* Emit exec and exit events for targets; also exec events of every process (a selection by
 * name that a new program may join). */
#define SETTINGS_EVENTS 4
#define SETTINGS_WATCH_EXEC 8
/* With SETTINGS_ALL: only the processes of cgroup cgroup_id (at depth cgroup_level) or below,
 * decided at each tick, so a process moved into it is captured from its next tick. */
#define SETTINGS_CGROUP 16

struct settings {
	__u32 flags;
	__u32 self_tgid;   /* never a target: polystack itself */
	__u32 stack_bytes; /* for SETTINGS_ALL */
	__u32 pad;
	__u64 ns_dev;
	__u64 ns_ino;
	__u64 cgroup_id;    /* for SETTINGS_CGROUP */
	__u32 cgroup_level;
	__u32 pad2;
};

/* Process events, version 2 records: what the host needs to describe and release processes. */
enum { EV_EXEC = 1, EV_EXIT = 2, EV_FORK = 3 };

struct process_event {
	__u16 version;
	__u16 header_size;
	__u32 size;
	__u32 tgid, tid;
	__u64 time_ns;
	__u32 kind;
	__u32 parent; /* EV_FORK: the creating process */
};

/* The fields of the kernel's task_struct read here, relocated by libbpf from the kernel's BTF. */
struct thread_struct {
	unsigned long fsbase;
} __attribute__((preserve_access_index));

struct upid {
	int nr;
} __attribute__((preserve_access_index));

struct pid {
	unsigned int level;
	struct upid numbers[1];
} __attribute__((preserve_access_index));

struct task_struct {
	unsigned int flags;
	int pid;
	int tgid;
	struct thread_struct thread;
	struct pid *thread_pid;
} __attribute__((preserve_access_index));

#define PF_EXITING 0x00000004
#define PF_KTHREAD 0x00200000

struct step {
	__u8 op;
	__u8 dst;
	__u8 a, b, c;
	__u8 size;
	__u16 label;
	__u32 max;
	__s32 next; /* a chain's next-pointer offset */
	__s64 imm;
};

struct plan {
	__u32 nsteps;
	__u32 pad;
	struct step steps[MAX_STEPS];
};

struct record_header {
	__u16 version;
	__u16 header_size;
	__u32 size;
	__u32 tgid, tid;
	__u64 time_ns;
	__u32 cpu;
	__u32 flags;
	__u64 regs[NREGS];
	__u64 stack_start;
	__u32 stack_len;
	__u16 plan_count;
	__u16 region_count;
	__u8 plan_stop_step[MAX_PLANS];
	__u8 plan_stop_reason[MAX_PLANS];
	__u64 reserved; /* zero; keeps the header at the contract's 200 bytes */
};

struct region_header {
	__u64 address;
	__u32 length;
	__u8 plan;
	__u8 step;
	__u16 label;
};

/* Per-run interpreter state, kept in the scratch page past RECORD_MAX (not on the 512-byte
 * BPF stack, and as plain memory the verifier does not track precisely across loop rounds). */
struct state {
	__u64 s[NSLOTS];
	__u32 off;
	__u32 plan;
	__u32 stop_step;
	__u32 stop_reason;
	__u32 regions;
	/* copy_user's progress: kept here, not in registers (see copy_user). */
	__u64 copy_done;
	__u32 copy_why;
	/* A chain step's cursor: the step and the next record's address. */
	__u32 chain_step;
	__u64 chain_next;
};

struct scratch_value {
	__u8 b[SCRATCH_SIZE];
};

_Static_assert(sizeof(struct step) == 24, "step");
_Static_assert(sizeof(struct plan) == 1160, "plan");
_Static_assert(sizeof(struct record_header) == 200, "record_header");
_Static_assert(sizeof(struct region_header) == 16, "region_header");
_Static_assert(sizeof(struct settings) == 48, "settings");
_Static_assert(sizeof(struct process_event) == 32, "process_event");
_Static_assert(sizeof(struct pt_regs) == 168, "x86-64 pt_regs");
_Static_assert(sizeof(struct state) <= PAGE - sizeof(struct pt_regs), "state");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct target);
} targets SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u64);
	__type(value, struct plan);
} plans SEC(".maps");

/*
 * Host-wide: the programs whose first tick the reader has been woken for (by tgid; an exec or
 * exit forgets one). A new program is described at its first tick, while it still runs, and
 * the reader sleeps otherwise (docs/benchmarks.md, "Figures behind the code's choices").
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 8192);
	__type(key, __u32);
	__type(value, __u8);
} first_ticked SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 8 << 20);
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1); /* the host sets libbpf_num_possible_cpus() */
	__type(key, __u32);
	__type(value, struct scratch_value);
} scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct settings);
} settings SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, C_COUNT);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

/* What the plan callbacks need that cannot live in a map value: pointers. */
struct run {
	__u8 *rec;
	struct plan *plan;
	__u64 tgid;
};

static __always_inline void count(__u32 index)
{
	__u64 *v = bpf_map_lookup_elem(&counters, &index);

	if (v)
		*v += 1;
}

static __always_inline struct settings *settings_of(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&settings, &zero);
}

/*
 * The current thread's tgid and tid as the host names them: the kernel's, or those in the
 * host's pid namespace. False for a thread outside that namespace (never a target then).
 */
static __always_inline int current_ids(struct settings *cfg, __u32 *tgid, __u32 *tid)
{
	if (cfg && (cfg->flags & SETTINGS_PIDNS)) {
		struct bpf_pidns_info ns = {};

		if (bpf_get_ns_current_pid_tgid(cfg->ns_dev, cfg->ns_ino, &ns, sizeof(ns)))
			return 0;
		*tgid = ns.tgid;
		*tid = ns.pid;
		return 1;
	}
	__u64 pid_tgid = bpf_get_current_pid_tgid();

	*tgid = pid_tgid >> 32;
	*tid = (__u32)pid_tgid;
	return 1;
}

/* The current thread's PF_* flags. */
static __always_inline unsigned int current_task_flags(void)
{
	struct task_struct *task = bpf_get_current_task_btf();
	unsigned int flags = 0;

	bpf_probe_read_kernel(&flags, sizeof(flags), __builtin_preserve_access_index(&task->flags));
	return flags;
}

/* Whether the current thread's process is captured, and with which stack size. */
static __always_inline int is_target(struct settings *cfg, __u32 tgid, __u32 *stack_bytes)
{
	struct target *t = bpf_map_lookup_elem(&targets, &tgid);

	if (t) {
		*stack_bytes = t->stack_bytes;
		return 1;
	}
	if (!cfg || !(cfg->flags & SETTINGS_ALL) || tgid == 0 || tgid == cfg->self_tgid)
		return 0;
	if (current_task_flags() & PF_KTHREAD)
		return 0; /* nothing to profile in user space */
	if ((cfg->flags & SETTINGS_CGROUP) &&
	    bpf_get_current_ancestor_cgroup_id(cfg->cgroup_level) != cfg->cgroup_id)
		return 0;
	*stack_bytes = cfg->stack_bytes;
	return 1;
}

static __always_inline void emit_event(__u32 kind, __u32 tgid, __u32 tid, __u32 parent,
				       __u64 wake)
{
	struct process_event e = {
		.version = 2,
		.header_size = sizeof(e),
		.size = sizeof(e),
		.tgid = tgid,
		.tid = tid,
		.time_ns = bpf_ktime_get_ns(),
		.kind = kind,
		.parent = parent,
	};

	if (bpf_ringbuf_output(&events, &e, sizeof(e), wake))
		count(C_EVENT_RING_FULL);
	else
		count(C_EVENTS);
}

#include "capture_plans.h"

/* Fills h->regs (polystack's DWARF order) from an x86-64 pt_regs. */
static __always_inline void store_regs(struct record_header *h, __u64 ax, __u64 dx, __u64 cx,
				       __u64 bx, __u64 si, __u64 di, __u64 bp, __u64 sp)
{
	h->regs[R_RAX] = ax;
	h->regs[R_RDX] = dx;
	h->regs[R_RCX] = cx;
	h->regs[R_RBX] = bx;
	h->regs[R_RSI] = si;
	h->regs[R_RDI] = di;
	h->regs[R_RBP] = bp;
	h->regs[R_RSP] = sp;
}

#define STORE_PT(h, pt)                                                                   \
	do {                                                                              \
		store_regs(h, (pt)->rax, (pt)->rdx, (pt)->rcx, (pt)->rbx, (pt)->rsi,      \
			   (pt)->rdi, (pt)->rbp, (pt)->rsp);                              \
		(h)->regs[R_R8] = (pt)->r8;                                               \
		(h)->regs[R_R9] = (pt)->r9;                                               \
		(h)->regs[R_R10] = (pt)->r10;                                             \
		(h)->regs[R_R11] = (pt)->r11;                                             \
		(h)->regs[R_R12] = (pt)->r12;                                             \
		(h)->regs[R_R13] = (pt)->r13;                                             \
		(h)->regs[R_R14] = (pt)->r14;                                             \
		(h)->regs[R_R15] = (pt)->r15;                                             \
		(h)->regs[R_RIP] = (pt)->rip;                                             \
	} while (0)

SEC("perf_event")
int tick_capture(struct bpf_perf_event_data *ctx)
{
	struct settings *cfg = settings_of();
	__u32 tgid, tid, want;

	if (!current_ids(cfg, &tgid, &tid) || !is_target(cfg, tgid, &want))
		return 0;
	count(C_TICKS);

	/*
	 * A thread in its exit: its user memory is being torn down and the host may have released
	 * the process at its exit event already, so a record would describe the pid anew.
	 */
	if (current_task_flags() & PF_EXITING) {
		count(C_THREAD_EXITING);
		return 0;
	}

	__u32 cpu = bpf_get_smp_processor_id();
	__u8 *rec = bpf_map_lookup_elem(&scratch, &cpu);
	if (!rec)
		return 0;
	struct record_header *h = (void *)rec;
	__u32 flags = 0;

	/* cs is read as a full u64: the verifier refuses narrower loads of this ctx field. */
	if ((ctx->regs.cs & 3) == 3) {
		STORE_PT(h, &ctx->regs);
		/* Keeps clang from merging these loads with the other branch's through one
		 * pointer: the verifier refuses ctx accesses through a computed pointer. */
		asm volatile("" ::: "memory");
	} else {
		/* The tick hit the kernel (a syscall, a fault): use the task's saved user regs. */
		struct pt_regs *pt = (void *)(rec + RECORD_MAX + sizeof(struct state));

		flags |= FLAG_IN_KERNEL;
		if (bpf_probe_read_kernel(pt, sizeof(*pt),
					  (void *)bpf_task_pt_regs(bpf_get_current_task_btf()))) {
			count(C_NO_USER_REGS);
			return 0;
		}
		STORE_PT(h, pt);
	}
	__u64 rsp = h->regs[R_RSP];
	if (!user_addr(h->regs[R_RIP]) || !user_addr(rsp)) {
		count(C_NO_USER_REGS);
		return 0;
	}

	__u32 why;
	if (want > STACK_MAX)
		want = STACK_MAX;
	__u32 got = copy_stack(rec, sizeof(*h), rsp, want, &why);
	if (!got)
		count(C_STACK_UNREADABLE);
	zero_pad(rec, sizeof(*h) + got);

	struct state *st = begin_plans(rec, got);
	struct run r = { .rec = rec, .plan = 0, .tgid = tgid };
	bpf_loop(MAX_PLANS, plan_cb, &r, 0);

	__u32 size = st->off;
	fill_header(h, size, tgid, tid, cpu, flags | FLAG_THREAD_POINTER, rsp, got, st->regions,
		    thread_pointer());
	if (size > RECORD_MAX)
		size = RECORD_MAX;
	/*
	 * No wakeup per record: a wakeup is an irq_work (a self-IPI, a VM exit under
	 * virtualisation) charged to the target's tick, dearer than the capture itself (figures:
	 * docs/benchmarks.md, "bpf mode"). The host polls on a timer; the kernel wakes it early
	 * only once the ring is a quarter full, so that a sleepy reader still does not lose records.
	 */
	__u64 wake = bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) >=
			     bpf_ringbuf_query(&events, BPF_RB_RING_SIZE) / 4
		     ? BPF_RB_FORCE_WAKEUP
		     : BPF_RB_NO_WAKEUP;
	if ((cfg->flags & SETTINGS_ALL) && !bpf_map_lookup_elem(&first_ticked, &tgid)) {
		__u8 one = 1;

		bpf_map_update_elem(&first_ticked, &tgid, &one, BPF_ANY);
		wake = BPF_RB_FORCE_WAKEUP; /* a program's first tick: described while it runs */
	}
	if (bpf_ringbuf_output(&events, rec, size, wake))
		count(C_RING_FULL);
	else
		count(C_RECORDS);
	return 0;
}

/* A target (or, host-wide, any process) ran a new program: the host reads its maps anew. */
SEC("raw_tracepoint/sched_process_exec")
int process_exec(void *ctx)
{
	struct settings *cfg = settings_of();
	__u32 tgid, tid, stack;

	if (!cfg || !(cfg->flags & SETTINGS_EVENTS) || !current_ids(cfg, &tgid, &tid))
		return 0;
	if (cfg->flags & SETTINGS_ALL) {
		/* Host-wide the new program's first tick wakes the reader, not its exec: most
		 * programs a host starts never get a tick. */
		bpf_map_delete_elem(&first_ticked, &tgid);
		if (is_target(cfg, tgid, &stack))
			emit_event(EV_EXEC, tgid, tid, 0, BPF_RB_NO_WAKEUP);
	} else if ((cfg->flags & SETTINGS_WATCH_EXEC) || is_target(cfg, tgid, &stack)) {
		emit_event(EV_EXEC, tgid, tid, 0, BPF_RB_FORCE_WAKEUP); /* selected while it runs */
	}
	return 0;
}

/* A target's main thread exits: the host releases what it holds for the process. */
SEC("raw_tracepoint/sched_process_exit")
int process_exit(void *ctx)
{
	struct settings *cfg = settings_of();
	__u32 tgid, tid, stack;

	if (cfg && (cfg->flags & SETTINGS_EVENTS) && current_ids(cfg, &tgid, &tid) && tgid == tid &&
	    is_target(cfg, tgid, &stack)) {
		if (cfg->flags & SETTINGS_ALL)
			bpf_map_delete_elem(&first_ticked, &tgid); /* its pid may be a new program's next */
		/* Host-wide every exit on the host comes here, and releasing can wait for the next
		 * read (docs/benchmarks.md, "Figures behind the code's choices"). */
		emit_event(EV_EXIT, tgid, tid, 0,
			   (cfg->flags & SETTINGS_ALL) ? BPF_RB_NO_WAKEUP : BPF_RB_FORCE_WAKEUP);
	}
	return 0;
}

/*
 * A target with TARGET_FOLLOW created a process: the child is a target from its first
 * instruction, so a child shorter-lived than the host's reaction is still captured. Kernel pids
 * only (not under SETTINGS_PIDNS, where the child's namespace pid is not at hand here).
 */
SEC("raw_tracepoint/sched_process_fork")
int process_fork(struct bpf_raw_tracepoint_args *ctx)
{
	struct settings *cfg = settings_of();
	struct task_struct *child = (struct task_struct *)ctx->args[1];
	int pid = 0, tgid = 0;

	if (cfg && (cfg->flags & SETTINGS_PIDNS))
		return 0;
	bpf_probe_read_kernel(&pid, sizeof(pid), __builtin_preserve_access_index(&child->pid));
	bpf_probe_read_kernel(&tgid, sizeof(tgid), __builtin_preserve_access_index(&child->tgid));
	if (pid != tgid || pid <= 0)
		return 0; /* a new thread of the same process */
	__u32 parent = bpf_get_current_pid_tgid() >> 32;
	struct target *t = bpf_map_lookup_elem(&targets, &parent);

	if (!t || !(t->flags & TARGET_FOLLOW))
		return 0;
	struct target copy = *t;
	__u32 key = (__u32)tgid;

	if (bpf_map_update_elem(&targets, &key, &copy, BPF_NOEXIST)) {
		count(C_FOLLOW_FULL);
		return 0;
	}
	count(C_FOLLOWED);
	emit_event(EV_FORK, (__u32)tgid, (__u32)pid, parent, BPF_RB_FORCE_WAKEUP);
	return 0;
}

#include "alloc_probe.h"

char LICENSE[] SEC("license") = "GPL";
