/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The capture plan interpreter, included by tick_capture.bpf.c after its maps and records:
 * user memory copied in page-aligned chunks, and the plan steps that name the regions to copy
 * (docs/capture-plans.md). Context-free: it reads the record's registers and user memory only,
 * so the tick and the allocation program (alloc_probe.h) share it.
 */

static __always_inline struct state *state_of(__u8 *rec)
{
	return (struct state *)(rec + RECORD_MAX);
}

enum { COPY_FAULT = 1, COPY_CUT = 2 };

/*
 * Copies user [addr, addr + len) into rec + off in page-aligned chunks: a single read fails as
 * a whole if any byte is unmapped, so chunking keeps everything before the first bad page.
 * Returns bytes copied; *why says why it stopped short.
 */
static __always_inline __u32 copy_user(__u8 *rec, __u64 off, __u64 addr, __u64 len, __u32 *why)
{
	/*
	 * The progress lives in the record's state, which the verifier does not track: with it in
	 * registers, each iteration's ways through the min() and the checks below are new states
	 * for every later iteration (docs/benchmarks.md, "bpf mode start-up").
	 */
	volatile struct state *st = (volatile struct state *)state_of(rec);
	__u32 cut = 0;

	if (off >= RECORD_MAX) {
		*why = COPY_CUT;
		return 0;
	}
	if (len > RECORD_MAX - off) {
		len = RECORD_MAX - off;
		cut = COPY_CUT;
	}
	st->copy_done = 0;
	st->copy_why = cut;
	for (int i = 0; i < MAX_CHUNKS; i++) {
		__u64 done = st->copy_done;
		if (done >= len)
			break;
		__u64 pos = off + done;
		__u64 n = PAGE - ((addr + done) & (PAGE - 1));
		if (n > len - done)
			n = len - done;
		barrier_var(pos);
		barrier_var(n);
		if (pos > RECORD_MAX || n > PAGE)
			break;
		if (bpf_probe_read_user(rec + pos, n, (void *)(addr + done))) {
			st->copy_why = COPY_FAULT;
			break;
		}
		st->copy_done = done + n;
	}
	*why = st->copy_why;
	return st->copy_done;
}

/* Zeroes the bytes between end and the next multiple of 8 (stale data of an older record). */
/*
 * A thread's stack from rsp - RED_ZONE up. The red zone may lie on a page the thread never
 * touched (rsp just above a page boundary); that page reads as zeros once faulted in, so it is
 * zeroed here and the copy goes on from rsp rather than losing the whole stack.
 */
static __always_inline __u32 copy_stack(__u8 *rec, __u64 off, __u64 rsp, __u32 want, __u32 *why)
{
	__u32 got = copy_user(rec, off, rsp - RED_ZONE, want, why);

	if (got || *why != COPY_FAULT || want <= RED_ZONE || off > RECORD_MAX - RED_ZONE)
		return got;
	__builtin_memset(rec + off, 0, RED_ZONE);
	got = copy_user(rec, off + RED_ZONE, rsp, want - RED_ZONE, why);
	return got ? RED_ZONE + got : 0;
}

static __always_inline void zero_pad(__u8 *rec, __u32 end)
{
	__u32 keep = end & 7;
	__u32 word = end & ~7U;

	if (!keep || word > RECORD_MAX - 8)
		return;
	__u64 *p = (__u64 *)(rec + word);
	*p &= (1ULL << (keep * 8)) - 1;
}

static __always_inline int user_addr(__u64 v)
{
	return v != 0 && v < USER_TOP;
}

/*
 * The thread pointer (x86-64: the FS base, glibc's struct pthread), as the kernel saved it at
 * the thread's last switch or arch_prctl: where thread-local state starts.
 */
static __always_inline __u64 thread_pointer(void)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u64 fs = 0;

	bpf_probe_read_kernel(&fs, sizeof(fs), __builtin_preserve_access_index(&task->thread.fsbase));
	return fs;
}

/*
 * The thread's id in its own pid namespace, what gettid() returns there and runtimes store in
 * their thread state: thread_pid->numbers[thread_pid->level].nr. 0 when unreadable.
 */
static __always_inline __u64 thread_id(void)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct pid *pid = 0;
	unsigned int level = 0;
	int nr = 0;

	bpf_probe_read_kernel(&pid, sizeof(pid), __builtin_preserve_access_index(&task->thread_pid));
	if (!pid)
		return 0;
	bpf_probe_read_kernel(&level, sizeof(level), __builtin_preserve_access_index(&pid->level));
	if (level > 31) /* MAX_PID_NS_LEVEL */
		return 0;
	void *first = (void *)__builtin_preserve_access_index(&pid->numbers[0].nr);
	if (bpf_probe_read_kernel(&nr, sizeof(nr), first + level * bpf_core_type_size(struct upid)))
		return 0;
	return (__u32)nr;
}

static __always_inline long stop(struct state *st, __u64 step, __u32 reason, __u32 counter)
{
	count(counter);
	st->stop_step = step + 1;
	st->stop_reason = reason;
	return 1;
}

static __always_inline void region(struct run *r, struct state *st, struct step *sp, __u64 idx,
				   __u64 addr, __u32 len)
{
	__u32 off = st->off;
	__u32 why;

	if (off > RECORD_MAX - sizeof(struct region_header)) {
		count(C_RECORD_FULL);
		return;
	}
	struct region_header *rh = (void *)(r->rec + off);
	__u32 got = copy_user(r->rec, off + sizeof(*rh), addr, len, &why);

	rh->address = addr;
	rh->length = got;
	rh->plan = st->plan;
	rh->step = idx;
	rh->label = sp->label;
	if (why == COPY_CUT)
		count(C_RECORD_FULL);
	else if (why == COPY_FAULT)
		count(got ? C_COPY_PARTIAL : C_COPY_FAILED);
	__u32 end = off + sizeof(*rh) + got;
	zero_pad(r->rec, end);
	st->off = (end + 7) & ~7U;
	st->regions++;
}

/* One record of a chain step: copy it, then move to the pointer it holds (docs/capture-plans.md). */
static long chain_cb(__u64 hop, struct run *r)
{
	struct plan *p = r->plan;
	__u8 *rec = r->rec;

	if (!p || !rec)
		return 1;
	struct state *st = state_of(rec);
	__u32 idx = st->chain_step;
	__u64 at = st->chain_next;

	if (idx >= MAX_STEPS || !user_addr(at))
		return 1;
	struct step *sp = &p->steps[idx];
	__u32 max = sp->max;
	__u64 next = 0;

	if (max > CHAIN_COPY_MAX)
		return 1;
	region(r, st, sp, idx, at + sp->imm, max);
	if (bpf_probe_read_user(&next, sizeof(next), (void *)(at + (__s64)sp->next))) {
		count(C_CHAIN_NEXT_UNREADABLE);
		next = 0;
	}
	st->chain_next = next;
	return user_addr(next) ? 0 : 1;
}

static long step_cb(__u64 idx, struct run *r)
{
	struct plan *p = r->plan;
	__u8 *rec = r->rec;

	if (!p || !rec || idx >= MAX_STEPS)
		return 1;
	struct state *st = state_of(rec);
	struct record_header *h = (void *)rec;
	struct step *sp = &p->steps[idx];
	__u8 op = sp->op, dst = sp->dst, a = sp->a, b = sp->b, c = sp->c;
	__u64 *s = st->s;

	/* Operand checks per op: a REG names a register, COPY may leave b empty, the rest are slots. */
	if (op < OP_REG || op > OP_TID)
		return stop(st, idx, STOP_INVALID, C_PLAN_INVALID);
	if (op == OP_REG ? a >= NREGS
			 : (op != OP_CONST && op != OP_TP && op != OP_TID && a >= NSLOTS))
		return stop(st, idx, STOP_INVALID, C_PLAN_INVALID);
	if ((op == OP_SUB || op == OP_MAX || op == OP_MIN || op == OP_IN_RANGE_OR ||
	     op == OP_CHECK_EQ || op == OP_CHECK_NE || op == OP_ADD_SLOTS ||
	     op == OP_LOAD_INDEXED) && b >= NSLOTS)
		return stop(st, idx, STOP_INVALID, C_PLAN_INVALID);
	if (op == OP_IN_RANGE_OR && c >= NSLOTS)
		return stop(st, idx, STOP_INVALID, C_PLAN_INVALID);
	if (op != OP_CHECK_EQ && op != OP_CHECK_NE && op != OP_COPY && dst >= NSLOTS)
		return stop(st, idx, STOP_INVALID, C_PLAN_INVALID);
	/* Masks restate the checks above in a form the verifier tracks for the indexing below. */
	dst &= NSLOTS - 1;
	c &= NSLOTS - 1;

	switch (op) {
	case OP_REG:
		if (a >= NREGS)
			return 1;
		s[dst] = h->regs[a];
		break;
	case OP_CONST:
		s[dst] = sp->imm;
		break;
	case OP_TP:
		s[dst] = thread_pointer();
		break;
	case OP_TID:
		s[dst] = thread_id();
		break;
	case OP_ADD:
		s[dst] = s[a & 7] + sp->imm;
		break;
	case OP_SUB:
		s[dst] = s[a & 7] - s[b & 7];
		break;
	case OP_MAX: {
		__u64 x = s[a & 7], y = s[b & 7];
		s[dst] = x > y ? x : y;
		break;
	}
	case OP_MIN: {
		__u64 x = s[a & 7], y = s[b & 7];
		s[dst] = x < y ? x : y;
		break;
	}
	case OP_LOAD:
	case OP_LOAD_INDEXED: {
		__u64 v = 0, at = s[a & 7] + sp->imm;
		__u32 scale = sp->max;
		long err;
		if (op == OP_LOAD_INDEXED) {
			if (scale < 1 || scale > MAX_SCALE)
				return stop(st, idx, STOP_INVALID, C_PLAN_INVALID);
			at += s[b & 7] * scale;
		}
		/* Constant sizes, so the verifier sees each read's bound; little-endian, so a short
		 * read into a zeroed u64 is the zero-extended value. */
		switch (sp->size) {
		case 1:
			err = bpf_probe_read_user(&v, 1, (void *)at);
			break;
		case 2:
			err = bpf_probe_read_user(&v, 2, (void *)at);
			break;
		case 4:
			err = bpf_probe_read_user(&v, 4, (void *)at);
			break;
		case 8:
			err = bpf_probe_read_user(&v, 8, (void *)at);
			break;
		default:
			return stop(st, idx, STOP_INVALID, C_PLAN_INVALID);
		}
		if (err)
			return stop(st, idx, STOP_LOAD, C_PLAN_LOAD_FAILED);
		s[dst] = v;
		break;
	}
	case OP_IN_RANGE_OR: {
		__u64 v = s[a & 7];
		if (s[b & 7] <= v && v < s[c])
			s[dst] = v;
		break;
	}
	case OP_CHECK_EQ:
		if (s[a & 7] != s[b & 7])
			return stop(st, idx, STOP_CHECK, C_PLAN_CHECK_FAILED);
		break;
	case OP_CHECK_NE:
		if (s[a & 7] == s[b & 7])
			return stop(st, idx, STOP_CHECK, C_PLAN_CHECK_FAILED);
		break;
	case OP_AND:
		s[dst] = s[a & 7] & sp->imm;
		break;
	case OP_SHL:
		s[dst] = s[a & 7] << (sp->imm & 63);
		break;
	case OP_SHR:
		s[dst] = s[a & 7] >> (sp->imm & 63);
		break;
	case OP_MUL:
		s[dst] = s[a & 7] * (__u64)sp->imm;
		break;
	case OP_ADD_SLOTS:
		s[dst] = s[a & 7] + s[b & 7];
		break;
	case OP_CHAIN: {
		__u32 hops = sp->size;
		if (sp->max < 1 || sp->max > CHAIN_COPY_MAX || hops < 1 || hops > MAX_HOPS)
			return stop(st, idx, STOP_INVALID, C_PLAN_INVALID);
		st->chain_step = idx;
		st->chain_next = s[a & 7];
		bpf_loop(hops, chain_cb, r, 0);
		s[dst] = user_addr(st->chain_next) ? st->chain_next : 0;
		break;
	}
	case OP_COPY: {
		__u32 max = sp->max;
		if (max > COPY_MAX || (b != NONE && b >= NSLOTS))
			return stop(st, idx, STOP_INVALID, C_PLAN_INVALID);
		__u64 len = max;
		if (b != NONE && s[b & 7] < len)
			len = s[b & 7];
		region(r, st, sp, idx, s[a & 7] + sp->imm, len);
		break;
	}
	}
	return 0;
}

static long plan_cb(__u64 idx, struct run *r)
{
	__u64 key = r->tgid << 8 | idx;
	struct plan *p = bpf_map_lookup_elem(&plans, &key);
	__u8 *rec = r->rec;

	if (!p || !rec || idx >= MAX_PLANS)
		return 1;
	struct state *st = state_of(rec);
	struct record_header *h = (void *)rec;

	for (int i = 0; i < NSLOTS; i++)
		st->s[i] = 0;
	st->plan = idx;
	st->stop_step = 0;
	st->stop_reason = 0;
	r->plan = p;
	__u32 n = p->nsteps;
	if (n > MAX_STEPS)
		stop(st, 0, STOP_INVALID, C_PLAN_INVALID);
	else
		bpf_loop(n, step_cb, r, 0);
	h->plan_stop_step[idx] = st->stop_step;
	h->plan_stop_reason[idx] = st->stop_reason;
	h->plan_count = idx + 1;
	return 0;
}

/* Before a record's plans run: its regions start after the copied stack, none stopped yet. */
static __always_inline struct state *begin_plans(__u8 *rec, __u32 got)
{
	struct record_header *h = (void *)rec;
	struct state *st = state_of(rec);

	st->off = (sizeof(*h) + got + 7) & ~7U;
	st->regions = 0;
	*(__u32 *)h->plan_stop_step = 0;
	*(__u32 *)h->plan_stop_reason = 0;
	h->plan_count = 0;
	return st;
}

/* The header of a stack record (a tick or an allocation's stack), once its regions are in. */
static __always_inline void fill_header(struct record_header *h, __u32 size, __u32 tgid,
					__u32 tid, __u32 cpu, __u32 flags, __u64 rsp, __u32 got,
					__u32 regions, __u64 reserved)
{
	h->version = 1;
	h->header_size = sizeof(*h);
	h->size = size;
	h->tgid = tgid;
	h->tid = tid;
	h->time_ns = bpf_ktime_get_ns();
	h->cpu = cpu;
	h->flags = flags;
	h->stack_start = rsp - RED_ZONE;
	h->stack_len = got;
	h->region_count = regions;
	h->reserved = reserved;
}
