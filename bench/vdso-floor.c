/*
 * The floor for tracing vDSO calls on this machine: the two mechanisms of `polystack vdso`'s
 * backends in minimal C, so bench/run-vdso.sh can put polystack's per-call cost next to theirs
 * in one run. Attaches to PID, traces one vDSO function (default clock_gettime) at entry and
 * return, and runs until the target exits (or SIGINT/SIGTERM), then prints its counts.
 *
 * -m perf (host/.../probes/PerfProbeBackend): per thread, a PERF_TYPE_BREAKPOINT (X, len 8)
 *   event at the entry with sample_period 1, IP|TID|TIME|REGS_USER (the 17 general registers)|
 *   STACK_USER (-b bytes, 512 as polystack), CLOCK_MONOTONIC time stamps, a 2^8-page ring woken
 *   at 64 KiB, remove_on_exec. The return address is the first stack word of an entry
 *   sample; a return event is opened there (up to 3 per thread: 4 debug registers minus the
 *   entry) and redirected into the entry's ring with SET_OUTPUT. Rings are drained after poll()
 *   (10 ms timeout); the target is never stopped and never signalled. A return pairs with its
 *   entry by rip == return address and rsp == entry rsp + 8; the timespec is decoded when it lies
 *   in the return sample's stack window. Lost records (PERF_RECORD_LOST) are counted.
 *
 * -m ptrace (host/.../probes/PtraceProbeBackend): PTRACE_SEIZE (TRACECLONE|TRACEEXEC) of every
 *   thread, and per thread the same breakpoint with sigtrap = 1 (sig_data = address, no ring,
 *   no samples): each hit is a SIGTRAP (si_code TRAP_PERF) signal-delivery stop. Per stop:
 *   waitpid(-1, __WALL), PTRACE_GETSIGINFO, PTRACE_GETREGS; at the entry process_vm_readv of the
 *   return address at rsp (and a return breakpoint opened the first time); at the return
 *   process_vm_readv of the output timespec; PTRACE_CONT with the SIGTRAP suppressed. Other
 *   signals are passed on unchanged, group-stops get PTRACE_LISTEN. waitpid blocks (-S: spins
 *   with WNOHANG instead).
 *
 * Resolution is setup, not per-call cost, and is done the short way: the vDSO base comes from
 * the target's auxv (AT_SYSINFO_EHDR), the function's offset from this process's own vDSO image
 * (same kernel, same image), looked up through its DT_HASH symbol table.
 *
 * Prints on stdout (or -o FILE) "key value" lines: entries, returns, calls (paired), lost
 * (ring records dropped by the kernel), return_missed, no_return_slot, outputs_captured.
 *
 * usage: vdso-floor -m perf|ptrace -p PID [-f FUNCTION] [-b STACK_BYTES] [-S] [-o FILE]
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <linux/hw_breakpoint.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef TRAP_PERF
#define TRAP_PERF 6
#endif

#define MAX_THREADS 256
#define SLOTS 4           /* debug registers per thread */
#define MAX_PENDING 64    /* as polystack's CallPairing */
#define RING_LOG2 8 /* as PerfProbeBackend.RING_LOG2 */
#define PAGE 4096
#define REGS_MASK (0x1ffULL | (0xffULL << 16)) /* AX..IP, R8..R15: 17 registers */
#define NREGS 17
#define R_AX 0
#define R_SI 4
#define R_SP 7
#define R_IP 8

struct pending {
  uint64_t ret, sp, out;
};

struct thread {
  int tid;
  int entry_fd;
  int ret_fd[SLOTS - 1];
  uint64_t ret_addr[SLOTS - 1];
  int nret;
  struct perf_event_mmap_page *ring;
  struct pending pend[MAX_PENDING];
  int npend;
};

static struct thread threads[MAX_THREADS];
static int nthreads;
static pid_t target;
static uint64_t entry_addr;
static int stack_bytes = 512;
static int ptrace_mode;
static volatile sig_atomic_t stop_requested;
static unsigned long long n_entries, n_returns, n_calls, n_lost, n_missed, n_noslot, n_outputs,
    n_unpaired;

static void die(const char *what) {
  fprintf(stderr, "vdso-floor: %s: %s\n", what, strerror(errno));
  exit(1);
}

static void on_stop(int sig) {
  (void)sig;
  stop_requested = 1;
}

/* --- resolution ----------------------------------------------------------------------------- */

static uint64_t target_vdso_base(void) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/auxv", target);
  FILE *f = fopen(path, "r");
  if (!f) die("open auxv");
  uint64_t kv[2], base = 0;
  while (fread(kv, sizeof kv, 1, f) == 1 && kv[0] != AT_NULL) {
    if (kv[0] == AT_SYSINFO_EHDR) base = kv[1];
  }
  fclose(f);
  if (base == 0) {
    fprintf(stderr, "vdso-floor: process %d has no vDSO\n", target);
    exit(1);
  }
  return base;
}

/* Offset of `name` (or __vdso_name) in our own vDSO image, through its DT_HASH symbol table. */
static uint64_t own_vdso_offset(const char *name) {
  const unsigned char *img = (const unsigned char *)getauxval(AT_SYSINFO_EHDR);
  if (!img) {
    fprintf(stderr, "vdso-floor: no vDSO in this process\n");
    exit(1);
  }
  const Elf64_Ehdr *eh = (const Elf64_Ehdr *)img;
  const Elf64_Phdr *ph = (const Elf64_Phdr *)(img + eh->e_phoff);
  const Elf64_Dyn *dyn = NULL;
  uint64_t load = 0;
  for (int i = 0; i < eh->e_phnum; i++) {
    if (ph[i].p_type == PT_DYNAMIC) dyn = (const Elf64_Dyn *)(img + ph[i].p_offset);
    if (ph[i].p_type == PT_LOAD && load == 0) load = ph[i].p_vaddr - ph[i].p_offset;
  }
  const Elf64_Sym *sym = NULL;
  const char *str = NULL;
  const uint32_t *hash = NULL;
  for (; dyn && dyn->d_tag != DT_NULL; dyn++) {
    if (dyn->d_tag == DT_SYMTAB) sym = (const Elf64_Sym *)(img + dyn->d_un.d_ptr - load);
    if (dyn->d_tag == DT_STRTAB) str = (const char *)(img + dyn->d_un.d_ptr - load);
    if (dyn->d_tag == DT_HASH) hash = (const uint32_t *)(img + dyn->d_un.d_ptr - load);
  }
  if (!sym || !str || !hash) {
    fprintf(stderr, "vdso-floor: the vDSO has no DT_SYMTAB/DT_STRTAB/DT_HASH\n");
    exit(1);
  }
  char prefixed[128];
  snprintf(prefixed, sizeof prefixed, "__vdso_%s", name);
  for (uint32_t i = 0; i < hash[1]; i++) { /* nchain = number of symbols */
    const char *n = str + sym[i].st_name;
    if (sym[i].st_shndx != SHN_UNDEF && ELF64_ST_TYPE(sym[i].st_info) == STT_FUNC
        && (strcmp(n, name) == 0 || strcmp(n, prefixed) == 0)) {
      return sym[i].st_value - load;
    }
  }
  fprintf(stderr, "vdso-floor: the vDSO exports no %s\n", name);
  exit(1);
}

/* --- breakpoints ---------------------------------------------------------------------------- */

static int open_breakpoint(int tid, uint64_t address) {
  struct perf_event_attr a;
  memset(&a, 0, sizeof a);
  a.type = PERF_TYPE_BREAKPOINT;
  a.size = sizeof a;
  a.bp_type = HW_BREAKPOINT_X;
  a.bp_addr = address;
  a.bp_len = 8;
  a.sample_period = 1;
  a.exclude_kernel = 1;
  a.exclude_hv = 1;
  a.remove_on_exec = 1;
  a.disabled = 1;
  if (ptrace_mode) {
    a.sigtrap = 1;
    a.sig_data = address;
  } else {
    a.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_REGS_USER
                    | PERF_SAMPLE_STACK_USER;
    a.sample_regs_user = REGS_MASK;
    a.sample_stack_user = stack_bytes;
    a.use_clockid = 1;
    a.clockid = CLOCK_MONOTONIC;
    a.watermark = 1;
    a.wakeup_watermark = 64 << 10; /* as PerfProbeBackend.WAKEUP_BYTES */
  }
  return (int)syscall(SYS_perf_event_open, &a, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
}

static struct thread *find_thread(int tid) {
  for (int i = 0; i < nthreads; i++)
    if (threads[i].tid == tid) return &threads[i];
  return NULL;
}

/* Opens the entry breakpoint of a thread (and its ring in perf mode); 0 if the thread is gone. */
static int arm(int tid) {
  if (find_thread(tid)) return 1;
  if (nthreads == MAX_THREADS) {
    fprintf(stderr, "vdso-floor: more than %d threads\n", MAX_THREADS);
    exit(1);
  }
  int fd = open_breakpoint(tid, entry_addr);
  if (fd < 0) {
    if (errno == ESRCH) return 0;
    die("perf_event_open (entry)");
  }
  struct thread *t = &threads[nthreads];
  memset(t, 0, sizeof *t);
  t->tid = tid;
  t->entry_fd = fd;
  if (!ptrace_mode) {
    void *m = mmap(NULL, (size_t)PAGE * (1 + (1 << RING_LOG2)), PROT_READ | PROT_WRITE,
                   MAP_SHARED, fd, 0);
    if (m == MAP_FAILED) die("mmap ring");
    t->ring = m;
  }
  if (ioctl(fd, PERF_EVENT_IOC_ENABLE, 0) != 0) die("enable");
  nthreads++;
  return 1;
}

static void watch_return(struct thread *t, uint64_t ret) {
  for (int i = 0; i < t->nret; i++)
    if (t->ret_addr[i] == ret) return;
  if (t->nret == SLOTS - 1) {
    n_noslot++;
    return;
  }
  int fd = open_breakpoint(t->tid, ret);
  if (fd < 0) return; /* thread gone */
  if (!ptrace_mode && ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, t->entry_fd) != 0) die("set output");
  if (ioctl(fd, PERF_EVENT_IOC_ENABLE, 0) != 0) die("enable return");
  t->ret_fd[t->nret] = fd;
  t->ret_addr[t->nret++] = ret;
}

static void disarm(struct thread *t) {
  for (int i = 0; i < t->nret; i++) close(t->ret_fd[i]);
  if (t->ring) munmap(t->ring, (size_t)PAGE * (1 + (1 << RING_LOG2)));
  close(t->entry_fd);
  t->ring = NULL;
  t->nret = 0;
}

static void drop_thread(int tid) {
  for (int i = 0; i < nthreads; i++) {
    if (threads[i].tid == tid) {
      disarm(&threads[i]);
      threads[i] = threads[--nthreads];
      return;
    }
  }
}

/* Entry/return bookkeeping shared by both modes, as polystack's CallPairing does it. */
static void on_entry(struct thread *t, uint64_t ret, uint64_t sp, uint64_t out) {
  n_entries++;
  watch_return(t, ret);
  while (t->npend > 0 && t->pend[t->npend - 1].sp <= sp) { /* returned unseen */
    t->npend--;
    n_missed++;
  }
  if (t->npend == MAX_PENDING) {
    memmove(t->pend, t->pend + 1, sizeof t->pend[0] * (MAX_PENDING - 1));
    t->npend--;
  }
  t->pend[t->npend++] = (struct pending){ret, sp, out};
}

/* Returns the matched entry's output pointer + 1 (0 if unmatched). */
static uint64_t on_return(struct thread *t, uint64_t ip, uint64_t sp) {
  n_returns++;
  for (int i = t->npend - 1; i >= 0; i--) {
    if (t->pend[i].ret == ip && t->pend[i].sp + 8 == sp) {
      uint64_t out = t->pend[i].out;
      memmove(t->pend + i, t->pend + i + 1, sizeof t->pend[0] * (t->npend - i - 1));
      t->npend--;
      n_calls++;
      return out + 1;
    }
  }
  n_unpaired++;
  return 0;
}

static int list_tasks(int *tids, int max) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/task", target);
  DIR *d = opendir(path);
  if (!d) return 0;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL && n < max) {
    if (e->d_name[0] >= '0' && e->d_name[0] <= '9') {
      int tid = atoi(e->d_name);
      char stat[96], buf[256];
      snprintf(stat, sizeof stat, "/proc/%d/task/%d/stat", target, tid);
      FILE *f = fopen(stat, "r");
      if (!f) continue;
      size_t len = fread(buf, 1, sizeof buf - 1, f);
      fclose(f);
      buf[len] = 0;
      char *p = strrchr(buf, ')');
      if (p && p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X')) continue; /* exited */
      tids[n++] = tid;
    }
  }
  closedir(d);
  return n;
}

/* --- perf: sample without stopping ---------------------------------------------------------- */

static void handle_sample(struct thread *t, const unsigned char *rec, size_t size) {
  const unsigned char *p = rec + sizeof(struct perf_event_header), *end = rec + size;
  uint64_t ip, abi, regs[NREGS], sz, dyn = 0;
  const unsigned char *stack = NULL;
  if (p + 32 > end) return;
  memcpy(&ip, p, 8);
  p += 8 + 8 + 8; /* ip, pid/tid, time */
  memcpy(&abi, p, 8);
  p += 8;
  if (abi == 0 || p + sizeof regs + 8 > end) return;
  memcpy(regs, p, sizeof regs);
  p += sizeof regs;
  memcpy(&sz, p, 8);
  p += 8;
  if (sz) {
    if (p + sz + 8 > end) return;
    stack = p;
    memcpy(&dyn, p + sz, 8);
    if (dyn > sz) dyn = sz;
  }
  if (ip == entry_addr) {
    uint64_t ret = 0;
    if (dyn < 8) return;
    memcpy(&ret, stack, 8);
    on_entry(t, ret, regs[R_SP], regs[R_SI]);
  } else {
    uint64_t out = on_return(t, regs[R_IP], regs[R_SP]);
    /* struct timespec at out - 1: decoded only when the return's stack window holds it. */
    if (out-- && out >= regs[R_SP] && out + 16 <= regs[R_SP] + dyn) {
      struct timespec ts;
      memcpy(&ts, stack + (out - regs[R_SP]), sizeof ts);
      n_outputs += ts.tv_nsec >= 0 && ts.tv_nsec < 1000000000;
    }
  }
}

static void drain(struct thread *t) {
  static unsigned char scratch[65536];
  struct perf_event_mmap_page *m = t->ring;
  const unsigned char *data = (const unsigned char *)m + m->data_offset;
  uint64_t dsize = m->data_size;
  uint64_t head = __atomic_load_n(&m->data_head, __ATOMIC_ACQUIRE);
  uint64_t tail = m->data_tail;
  while (tail < head) {
    struct perf_event_header h;
    uint64_t off = tail % dsize;
    const unsigned char *rec;
    if (off + sizeof h <= dsize) {
      memcpy(&h, data + off, sizeof h);
    } else {
      size_t first = dsize - off;
      memcpy(&h, data + off, first);
      memcpy((unsigned char *)&h + first, data, sizeof h - first);
    }
    if (h.size < sizeof h || h.size > head - tail) break;
    if (off + h.size <= dsize) {
      rec = data + off;
    } else { /* straddles the end of the ring: reassemble */
      size_t first = dsize - off;
      memcpy(scratch, data + off, first);
      memcpy(scratch + first, data, h.size - first);
      rec = scratch;
    }
    if (h.type == PERF_RECORD_SAMPLE) {
      handle_sample(t, rec, h.size);
    } else if (h.type == PERF_RECORD_LOST && h.size >= sizeof h + 16) {
      uint64_t lost;
      memcpy(&lost, rec + sizeof h + 8, 8);
      n_lost += lost;
    }
    tail += h.size;
  }
  __atomic_store_n(&m->data_tail, tail, __ATOMIC_RELEASE);
}

static void rescan(void) {
  int tids[MAX_THREADS];
  int n = list_tasks(tids, MAX_THREADS);
  for (int i = 0; i < n; i++) arm(tids[i]);
}

static void run_perf(void) {
  rescan();
  struct pollfd pfd[MAX_THREADS];
  struct timespec last, now;
  clock_gettime(CLOCK_MONOTONIC, &last);
  while (!stop_requested && nthreads > 0) {
    int n = nthreads;
    for (int i = 0; i < n; i++) pfd[i] = (struct pollfd){threads[i].entry_fd, POLLIN, 0};
    if (poll(pfd, n, 10) < 0 && errno != EINTR) die("poll");
    for (int i = n - 1; i >= 0; i--) {
      drain(&threads[i]);
      if (pfd[i].revents & (POLLHUP | POLLERR)) drop_thread(threads[i].tid); /* thread exited */
    }
    clock_gettime(CLOCK_MONOTONIC, &now);
    if ((now.tv_sec - last.tv_sec) * 1000000000L + (now.tv_nsec - last.tv_nsec) >= 100000000L) {
      last = now;
      rescan();
    }
  }
  for (int i = 0; i < nthreads; i++) drain(&threads[i]);
  while (nthreads > 0) drop_thread(threads[0].tid);
}

/* --- ptrace: stop at every hit -------------------------------------------------------------- */

static int read_target(int tid, uint64_t addr, void *buf, size_t len) {
  struct iovec local = {buf, len}, remote = {(void *)addr, len};
  return process_vm_readv(tid, &local, 1, &remote, 1, 0) == (ssize_t)len;
}

static void hit(int tid) {
  struct user_regs_struct r;
  if (ptrace(PTRACE_GETREGS, tid, 0, &r) != 0) return;
  struct thread *t = find_thread(tid);
  if (!t) return;
  if (r.rip == entry_addr) {
    uint64_t ret;
    if (read_target(tid, r.rsp, &ret, 8)) on_entry(t, ret, r.rsp, r.rsi);
  } else {
    uint64_t out = on_return(t, r.rip, r.rsp);
    struct timespec ts;
    if (out-- && read_target(tid, out, &ts, sizeof ts)) n_outputs++;
  }
}

static int is_group_stop_signal(int sig) {
  return sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU;
}

static int sigtrap_pending(int tid) {
  char path[64], line[256];
  snprintf(path, sizeof path, "/proc/%d/task/%d/status", target, tid);
  FILE *f = fopen(path, "r");
  int pending = 0;
  while (f && fgets(line, sizeof line, f))
    if (strncmp(line, "SigPnd:", 7) == 0) pending = (strtoull(line + 7, NULL, 16) >> (SIGTRAP - 1)) & 1;
  if (f) fclose(f);
  return pending;
}

/* Disarm first, then detach each thread; a SIGTRAP of ours already queued is consumed first. */
static void release(int *tids, int n) {
  while (nthreads > 0) drop_thread(threads[0].tid);
  for (int i = 0; i < n; i++) {
    int tid = tids[i], st;
    if (ptrace(PTRACE_INTERRUPT, tid, 0, 0) != 0) continue;
    for (int round = 0; round < 8; round++) {
      if (waitpid(tid, &st, __WALL) != tid || !WIFSTOPPED(st)) break;
      int sig = st >> 16 ? 0 : WSTOPSIG(st);
      siginfo_t si;
      if (sig == SIGTRAP && ptrace(PTRACE_GETSIGINFO, tid, 0, &si) == 0 && si.si_code == TRAP_PERF)
        sig = 0;
      if (st >> 16 || !sigtrap_pending(tid)) {
        ptrace(PTRACE_DETACH, tid, 0, (void *)(long)sig);
        break;
      }
      ptrace(PTRACE_CONT, tid, 0, 0); /* runs into the pending SIGTRAP's stop */
    }
  }
}

static void run_ptrace(int spin) {
  int traced[MAX_THREADS], ntraced = 0;
  const long opts = PTRACE_O_TRACECLONE | PTRACE_O_TRACEEXEC;
  for (int round = 0, fresh = 1; fresh && round < 100; round++) {
    int tids[MAX_THREADS];
    int n = list_tasks(tids, MAX_THREADS);
    fresh = 0;
    for (int i = 0; i < n; i++) {
      if (find_thread(tids[i])) continue;
      if (ptrace(PTRACE_SEIZE, tids[i], 0, (void *)opts) != 0) {
        if (errno == ESRCH) continue;
        die("PTRACE_SEIZE");
      }
      traced[ntraced++] = tids[i];
      fresh = 1;
      arm(tids[i]);
    }
  }
  while (ntraced > 0 && !stop_requested) {
    int st, tid;
    if (spin) {
      while ((tid = waitpid(-1, &st, __WALL | WNOHANG)) == 0 && !stop_requested)
        __builtin_ia32_pause();
    } else {
      tid = waitpid(-1, &st, __WALL);
    }
    if (tid <= 0) {
      if (errno == EINTR || tid == 0) continue;
      die("waitpid");
    }
    if (WIFEXITED(st) || WIFSIGNALED(st)) {
      drop_thread(tid);
      for (int i = 0; i < ntraced; i++)
        if (traced[i] == tid) traced[i] = traced[--ntraced];
      continue;
    }
    if (!WIFSTOPPED(st)) continue;
    int event = st >> 16, sig = WSTOPSIG(st);
    if (event == PTRACE_EVENT_STOP) {
      ptrace(is_group_stop_signal(sig) ? PTRACE_LISTEN : PTRACE_CONT, tid, 0, 0);
    } else if (event == PTRACE_EVENT_CLONE) {
      unsigned long child;
      ptrace(PTRACE_GETEVENTMSG, tid, 0, &child);
      if (ntraced < MAX_THREADS) traced[ntraced++] = (int)child;
      arm((int)child);
      ptrace(PTRACE_CONT, tid, 0, 0);
    } else if (event != 0) {
      ptrace(PTRACE_CONT, tid, 0, 0); /* exec: the floor does not follow a new image */
    } else {
      siginfo_t si;
      if (sig == SIGTRAP && ptrace(PTRACE_GETSIGINFO, tid, 0, &si) == 0
          && si.si_code == TRAP_PERF) {
        hit(tid);
        sig = 0; /* ours: suppressed */
      }
      ptrace(PTRACE_CONT, tid, 0, (void *)(long)sig);
    }
  }
  if (ntraced > 0) release(traced, ntraced);
}

int main(int argc, char **argv) {
  const char *mode = NULL, *fn = "clock_gettime", *out = NULL;
  int spin = 0, opt;
  while ((opt = getopt(argc, argv, "m:p:f:b:So:")) != -1) {
    switch (opt) {
      case 'm': mode = optarg; break;
      case 'p': target = atoi(optarg); break;
      case 'f': fn = optarg; break;
      case 'b': stack_bytes = atoi(optarg); break;
      case 'S': spin = 1; break;
      case 'o': out = optarg; break;
      default: goto usage;
    }
  }
  if (!mode || target <= 0 || (strcmp(mode, "perf") && strcmp(mode, "ptrace"))) goto usage;
  ptrace_mode = strcmp(mode, "ptrace") == 0;
  /* No SA_RESTART: a blocked waitpid or poll returns EINTR and the loop ends cleanly. */
  struct sigaction sa = {.sa_handler = on_stop};
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  entry_addr = target_vdso_base() + own_vdso_offset(fn);
  if (ptrace_mode)
    run_ptrace(spin);
  else
    run_perf();
  FILE *f = out ? fopen(out, "w") : stdout;
  if (!f) die("open output");
  fprintf(f,
          "entries %llu\nreturns %llu\ncalls %llu\nlost %llu\nreturn_missed %llu\n"
          "return_without_entry %llu\nno_return_slot %llu\noutputs_captured %llu\n",
          n_entries, n_returns, n_calls, n_lost, n_missed, n_unpaired, n_noslot, n_outputs);
  return fclose(f) == 0 ? 0 : 1;
usage:
  fprintf(stderr, "usage: vdso-floor -m perf|ptrace -p PID [-f FUNCTION] [-b STACK_BYTES] [-S]"
                  " [-o FILE]\n");
  return 2;
}
