/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Allocation sampling, included by tick_capture.bpf.c so that it shares its maps and ring: one
 * program on uprobe session links at the allocator's entry points (the host attaches it with
 * BPF_LINK_CREATE, attach type BPF_TRACE_UPROBE_SESSION). Every call pays the countdown; only a
 * sampled call copies its stack, sends the stack once per digest and arms its return probe
 * (entry returns 0), which records the address for the in-use view. Frees are matched against
 * the sampled live blocks only. Layouts and figures: docs/allocations.md.
 */

extern __u64 *bpf_session_cookie(void) __ksym;
extern _Bool bpf_session_is_return(void) __ksym;

/* K_LUA_ALLOC: a runtime's lua_Alloc, f(ud, ptr, osize, nsize), named by its plug-in.
 * K_CALL: any function whose calls are sampled (record --event calls): each call weighs 1.
 * K_MMAP, K_MUNMAP: the C library's mmap(addr, len, prot, flags, fd, off) of anonymous memory
 * and munmap(addr, len), called from outside the allocators' own modules. */
enum { K_MALLOC = 1, K_CALLOC, K_REALLOC, K_MEMALIGN, K_POSIX_MEMALIGN, K_FREE, K_LUA_ALLOC,
       K_CALL, K_MMAP, K_MUNMAP };

#define ALLOC_SITES 16
#define EXP_TABLE 4096
#define TEXT_RANGES 32
#define ALLOCATOR_RANGES 8
#define MAPPER_RANGES 4
#define MAP_ANONYMOUS 0x20
#define MAP_FAILED_ADDRESS ((__u64)-1)
#define ALLOC_EVERY_CALL 1
#define ALLOC_NO_ADDRESS 2
/* Bytes beyond this per call are taken as this many: keeps the countdown's arithmetic exact. */
#define ALLOC_SIZE_CAP (1ULL << 48)

struct alloc_site {
	__u32 kind;
	__u32 pad;
};

struct alloc_config {
	__u64 mean;        /* bytes between samples on average; 0: every call */
	__u32 stack_bytes; /* stack copied at a sampled call */
	__u32 pad;
};

/* Per process, from the host's module table: executable ranges (sorted, padded with
 * [USER_TOP, USER_TOP), for the digest) and
 * the probed allocator functions (a call from inside one is the allocator's own business). */
struct alloc_ranges {
	__u32 text_count;
	__u32 allocator_count;
	__u64 text[TEXT_RANGES][2];
	__u64 allocator[ALLOCATOR_RANGES][2];
	/* The text of the modules whose own mmap calls serve an allocator (the C library, the
	 * allocator's module, a runtime's): their mmap and munmap calls are not counted again. */
	__u32 mapper_count;
	__u32 pad;
	__u64 mapper[MAPPER_RANGES][2];
};

struct alloc_countdown {
	__s64 left;
	__u64 started;
};

struct live_key {
	__u32 tgid;
	__u32 pad;
	__u64 address;
};

struct live_value {
	__u64 size;
	__u64 digest;
};

/* A sampled call between its entry and its return, by thread. */
struct alloc_pending {
	__u64 time_ns;
	__u64 size;
	__u64 digest;
	__u64 memptr;
	__u64 old_address;
	__u32 site;
	__u32 kind;
};

/* Version 3 record: one sampled allocation. */
struct alloc_event {
	__u16 version;
	__u16 header_size;
	__u32 size;
	__u32 tgid, tid;
	__u64 time_ns;
	__u16 site;
	__u8 kind;
	__u8 flags;
	__u32 pad;
	__u64 bytes;
	__u64 address;
	__u64 old_address;
	__u64 digest;
};

/* Version 4 record: a sampled block freed. */
struct free_event {
	__u16 version;
	__u16 header_size;
	__u32 size;
	__u32 tgid, tid;
	__u64 time_ns;
	__u64 address;
	__u64 digest;
	__u64 bytes;
};

_Static_assert(sizeof(struct alloc_event) == 64, "alloc_event");
_Static_assert(sizeof(struct free_event) == 48, "free_event");
_Static_assert(sizeof(struct alloc_ranges) == 720, "alloc_ranges");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, ALLOC_SITES);
	__type(key, __u32);
	__type(value, struct alloc_site);
} alloc_sites SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct alloc_config);
} alloc_config SEC(".maps");

/* T[i] = mean * -ln(1 - i/4096): the inverse CDF of the exponential gap, written by the host. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, EXP_TABLE);
	__type(key, __u32);
	__type(value, __u64);
} exp_table SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct alloc_countdown);
} alloc_left SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, struct alloc_ranges);
} alloc_ranges SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, __u8);
} seen SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, struct live_key);
	__type(value, struct live_value);
} live SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct alloc_pending);
} pending SEC(".maps");

static __always_inline __u64 ring_wake(void)
{
	return bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) >=
			       bpf_ringbuf_query(&events, BPF_RB_RING_SIZE) / 4
		       ? BPF_RB_FORCE_WAKEUP
		       : BPF_RB_NO_WAKEUP;
}

/* One exponential gap of mean bytes: the table's inverse CDF, linear between entries. */
static __always_inline __u64 draw(__u64 mean)
{
	__u32 r = bpf_get_prandom_u32();
	__u32 i = r >> 20;
	__u64 f = (r >> 4) & 0xffff;
	__u64 *a = bpf_map_lookup_elem(&exp_table, &i);

	if (!a)
		return mean;
	if (i >= EXP_TABLE - 1)
		return *a + mean; /* the open last bucket: memoryless, so its mean excess is mean */
	__u32 j = i + 1;
	__u64 *b = bpf_map_lookup_elem(&exp_table, &j);
	if (!b || *b < *a)
		return *a;
	return *a + (((*b - *a) * f) >> 16);
}

/* Whether this call of size bytes is sampled: a per-CPU Poisson countdown over bytes. */
static __always_inline int sampled(__u64 mean, __u64 size)
{
	__u32 zero = 0;
	struct alloc_countdown *c;

	if (!mean)
		return 1;
	c = bpf_map_lookup_elem(&alloc_left, &zero);
	if (!c)
		return 0;
	if (!c->started) {
		c->started = 1;
		c->left = draw(mean);
	}
	if (size > ALLOC_SIZE_CAP)
		size = ALLOC_SIZE_CAP;
	c->left -= (__s64)size;
	if (c->left > 0)
		return 0;
	for (int i = 0; i < 4 && c->left <= 0; i++)
		c->left += draw(mean);
	if (c->left <= 0) {
		count(C_ALLOC_INTERVAL_CLAMPED);
		c->left = draw(mean);
	}
	return 1;
}

/* Whether v lies in one of the first n of ranges, which holds max. */
static __always_inline int in_ranges(__u64 v, __u64 (*ranges)[2], __u32 n, const int max)
{
	for (int i = 0; i < max; i++) {
		if (i >= n)
			break;
		if (ranges[i][0] <= v && v < ranges[i][1])
			return 1;
	}
	return 0;
}

/* An allocator's call to itself (into allocator), or, for mmap and munmap, an allocator's own
 * mapping (into mapper): counted once already, as the call that made it. */
static __always_inline int internal_call(struct alloc_ranges *r, __u64 rsp, __u32 kind)
{
	__u64 ret = 0;

	if (bpf_probe_read_user(&ret, sizeof(ret), (void *)rsp))
		return 0;
	if (in_ranges(ret, r->allocator, r->allocator_count, ALLOCATOR_RANGES))
		return 1;
	return (kind == K_MMAP || kind == K_MUNMAP) &&
	       in_ranges(ret, r->mapper, r->mapper_count, MAPPER_RANGES);
}

static __always_inline void alloc_free(__u32 tgid, __u32 tid, __u64 address)
{
	struct live_key k = { .tgid = tgid, .address = address };
	struct live_value *v;

	if (!address)
		return;
	v = bpf_map_lookup_elem(&live, &k);
	if (!v)
		return;
	struct free_event e = {
		.version = 4,
		.header_size = sizeof(e),
		.size = sizeof(e),
		.tgid = tgid,
		.tid = tid,
		.time_ns = bpf_ktime_get_ns(),
		.address = address,
		.digest = v->digest,
		.bytes = v->size,
	};
	bpf_map_delete_elem(&live, &k);
	count(C_FREE_MATCHED);
	if (bpf_ringbuf_output(&events, &e, sizeof(e), ring_wake()))
		count(C_ALLOC_EVENT_RING_FULL);
}

struct digest_run {
	__u8 *rec;
	struct alloc_ranges *ranges;
	__u64 hash;
	__u64 base;
	__u64 words;
};

/* FNV-1a over the stack words that point into executable ranges: return addresses, not the
 * locals that change at every call, so one call path keeps one digest. */
static long digest_cb(__u64 i, struct digest_run *d)
{
	struct alloc_ranges *r = d->ranges;
	__u8 *rec = d->rec;

	if (!r || !rec || i >= d->words)
		return 1;
	__u64 off = d->base + i * 8;
	if (off > RECORD_MAX - 8)
		return 1;
	__u64 v = *(__u64 *)(rec + off);
	if (v >= USER_TOP)
		return 0;
	/* Branch-free binary search (the verifier would walk every path of a branching one): the
	 * host pads the table with [USER_TOP, USER_TOP), so all values are below 2^48 and the
	 * sign of v - start says whether start <= v. */
	__u64 base = 0;
	for (__u64 half = TEXT_RANGES / 2; half; half >>= 1) {
		__u64 start = r->text[(base + half) & (TEXT_RANGES - 1)][0];
		base += half & (((v - start) >> 63) - 1);
	}
	base &= TEXT_RANGES - 1;
	if (r->text[base][0] <= v && v < r->text[base][1]) {
		d->hash ^= v;
		d->hash *= 0x100000001b3ULL;
	}
	return 0;
}

/* The return of a sampled call: the block's address, into live, and the allocation's record. */
static __always_inline int alloc_return(struct pt_regs *ctx)
{
	struct settings *cfg = settings_of();
	__u32 tgid, tid;
	__u64 *cookie = bpf_session_cookie();

	if (!current_ids(cfg, &tgid, &tid))
		return 0;
	struct alloc_pending *found = bpf_map_lookup_elem(&pending, &tid);
	if (!found || !cookie || found->time_ns != *cookie) {
		count(C_ALLOC_RETURN_UNMATCHED);
		return 0;
	}
	struct alloc_pending p = *found;
	bpf_map_delete_elem(&pending, &tid);

	__u64 address = ctx->rax;
	if (p.kind == K_POSIX_MEMALIGN) {
		address = 0;
		if (ctx->rax == 0)
			bpf_probe_read_user(&address, sizeof(address), (void *)p.memptr);
	}
	if (!address || (p.kind == K_MMAP && address == MAP_FAILED_ADDRESS))
		return 0; /* the allocation failed: nothing was allocated */
	struct alloc_event e = {
		.version = 3,
		.header_size = sizeof(e),
		.size = sizeof(e),
		.tgid = tgid,
		.tid = tid,
		.time_ns = p.time_ns,
		.site = p.site,
		.kind = p.kind,
		.bytes = p.size,
		.address = address,
		.old_address = p.old_address,
		.digest = p.digest,
	};
	struct live_key k = { .tgid = tgid, .address = address };
	struct live_value v = { .size = p.size, .digest = p.digest };
	if (bpf_map_update_elem(&live, &k, &v, BPF_ANY)) {
		count(C_INUSE_MAP_FULL);
		e.flags |= ALLOC_NO_ADDRESS;
	}
	if (bpf_ringbuf_output(&events, &e, sizeof(e), ring_wake()))
		count(C_ALLOC_EVENT_RING_FULL);
	return 0;
}

/* Sends the stack of a sampled call once per digest (always when the digest is 0). */
static __always_inline int define_stack(struct pt_regs *ctx, __u32 tgid, __u32 tid,
					 __u32 site, struct alloc_config *ac, __u64 *digest_out)
{
	__u32 cpu = bpf_get_smp_processor_id();
	__u8 *rec = bpf_map_lookup_elem(&scratch, &cpu);

	if (!rec)
		return 0;
	struct record_header *h = (void *)rec;

	STORE_PT(h, ctx);
	h->regs[R_RIP] = bpf_get_func_ip(ctx);
	__u64 rsp = h->regs[R_RSP];
	if (!user_addr(h->regs[R_RIP]) || !user_addr(rsp)) {
		count(C_NO_USER_REGS);
		return 0;
	}
	__u32 why, want = ac->stack_bytes;
	if (want > STACK_MAX)
		want = STACK_MAX;
	__u32 got = copy_stack(rec, sizeof(*h), rsp, want, &why);
	if (!got)
		count(C_STACK_UNREADABLE);
	zero_pad(rec, sizeof(*h) + got);

	__u64 digest = 0;
	__u64 plan_key = (__u64)tgid << 8;
	int planned = bpf_map_lookup_elem(&plans, &plan_key) != 0;
	struct alloc_ranges *ranges = bpf_map_lookup_elem(&alloc_ranges, &tgid);
	if (planned) {
		/* A runtime's frames come from its plan's regions, which this digest does not see. */
		count(C_ALLOC_DEFINITION_UNDEDUPLICATED);
	} else if (ranges && got > RED_ZONE) {
		struct digest_run d = {
			.rec = rec,
			.ranges = ranges,
			/* Seeded with the process and site: the seen map serves every target. */
			.hash = 0xcbf29ce484222325ULL ^ ((__u64)tgid << 32) ^ site,
			.base = sizeof(*h) + RED_ZONE,
			.words = (got - RED_ZONE) / 8,
		};
		bpf_loop(STACK_MAX / 8, digest_cb, &d, 0);
		digest = d.hash ? d.hash : 1;
		if (bpf_map_lookup_elem(&seen, &digest)) {
			count(C_ALLOC_DEFINITION_DEDUPLICATED);
			*digest_out = digest;
			return 1;
		}
	} else {
		count(C_ALLOC_DEFINITION_UNDEDUPLICATED);
	}

	struct state *st = begin_plans(rec, got);
	if (planned) {
		struct run r = { .rec = rec, .plan = 0, .tgid = tgid };
		bpf_loop(MAX_PLANS, plan_cb, &r, 0);
	}
	__u32 size = st->off;
	fill_header(h, size, tgid, tid, cpu, FLAG_STACK_DEFINITION, rsp, got, st->regions, digest);
	__u64 len = size;
	/* Clamped in asm: clang compares a copy and passes the unclamped register otherwise. */
	asm volatile("if %[n] <= %[max] goto +1; %[n] = %[max]" : [n] "+r"(len) : [max] "i"(RECORD_MAX));
	if (bpf_ringbuf_output(&events, rec, len, ring_wake())) {
		count(C_ALLOC_DEFINITION_LOST);
		return 0;
	}
	count(C_ALLOC_DEFINITION_SENT);
	if (digest) {
		__u8 one = 1;
		bpf_map_update_elem(&seen, &digest, &one, BPF_ANY);
	}
	*digest_out = digest;
	return 1;
}

SEC("uprobe")
int alloc_probe(struct pt_regs *ctx)
{
	if (bpf_session_is_return())
		return alloc_return(ctx);

	struct settings *cfg = settings_of();
	__u32 tgid, tid, stack, zero = 0;

	if (!current_ids(cfg, &tgid, &tid) || !is_target(cfg, tgid, &stack))
		return 1;
	count(C_ALLOC_CALLS);
	__u32 site = bpf_get_attach_cookie(ctx);
	struct alloc_site *s = bpf_map_lookup_elem(&alloc_sites, &site);
	struct alloc_config *ac = bpf_map_lookup_elem(&alloc_config, &zero);
	if (!s || !ac)
		return 1;
	__u32 kind = s->kind;
	__u64 size = 0, memptr = 0, old = 0;
	struct alloc_ranges *ranges = bpf_map_lookup_elem(&alloc_ranges, &tgid);
	if (ranges && internal_call(ranges, ctx->rsp, kind)) {
		count(C_ALLOC_INTERNAL_CALL);
		return 1;
	}

	switch (kind) {
	case K_FREE:
		alloc_free(tgid, tid, ctx->rdi);
		return 1;
	case K_MALLOC:
		size = ctx->rdi;
		break;
	case K_CALLOC:
		if ((ctx->rdi | ctx->rsi) >> 32)
			return 1; /* 4 GiB elements or counts: calloc fails or it is not a heap block */
		size = ctx->rdi * ctx->rsi;
		break;
	case K_REALLOC:
		/* realloc(NULL, n) tail-calls malloc, which counts it; realloc(p, 0) frees p. */
		if (!ctx->rdi)
			return 1;
		alloc_free(tgid, tid, ctx->rdi);
		if (!ctx->rsi)
			return 1;
		old = ctx->rdi;
		size = ctx->rsi;
		break;
	case K_MEMALIGN:
		size = ctx->rsi;
		break;
	case K_LUA_ALLOC:
		/* nsize 0 frees ptr; ptr NULL allocates nsize; otherwise ptr is resized to nsize. */
		alloc_free(tgid, tid, ctx->rsi);
		if (!ctx->rcx)
			return 1;
		old = ctx->rsi;
		size = ctx->rcx;
		break;
	case K_POSIX_MEMALIGN:
		size = ctx->rdx;
		memptr = ctx->rdi;
		break;
	case K_CALL:
		size = 1;
		break;
	case K_MMAP:
		if (!(ctx->rcx & MAP_ANONYMOUS) || !ctx->rsi)
			return 1; /* a file mapping, or nothing mapped */
		size = ctx->rsi;
		break;
	case K_MUNMAP:
		alloc_free(tgid, tid, ctx->rdi);
		return 1;
	default:
		return 1;
	}
	if (!sampled(ac->mean, size))
		return 1;
	count(C_ALLOC_SAMPLED);
	__u64 digest = 0;
	if (!define_stack(ctx, tgid, tid, site, ac, &digest))
		return 1;
	if (kind == K_CALL) {
		/* A call is complete at its entry: its record goes now and no return probe is armed. */
		struct alloc_event e = {
			.version = 3,
			.header_size = sizeof(e),
			.size = sizeof(e),
			.tgid = tgid,
			.tid = tid,
			.time_ns = bpf_ktime_get_ns(),
			.site = site,
			.kind = kind,
			.flags = ALLOC_NO_ADDRESS,
			.bytes = 1,
			.digest = digest,
		};
		if (bpf_ringbuf_output(&events, &e, sizeof(e), ring_wake()))
			count(C_ALLOC_EVENT_RING_FULL);
		return 1;
	}
	struct alloc_pending p = {
		.time_ns = bpf_ktime_get_ns(),
		.size = size,
		.digest = digest,
		.memptr = memptr,
		.old_address = old,
		.site = site,
		.kind = kind,
	};
	__u64 *cookie = bpf_session_cookie();
	if (!cookie || bpf_map_update_elem(&pending, &tid, &p, BPF_ANY)) {
		count(C_ALLOC_RETURN_UNMATCHED);
		return 1;
	}
	*cookie = p.time_ns;
	return 0; /* arms this call's return probe */
}
