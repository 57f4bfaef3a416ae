/*
 * Stray-trap reproducer: does a hardware execution breakpoint on this machine ever raise a
 * SIGTRAP that no breakpoint explains (a debug exception whose DR6 reads 0, which the kernel's
 * exc_debug_user() takes for an icebp and answers with SIGTRAP, si_code TRAP_BRKPT), and under
 * which conditions? No Java, no polystack: perf_event breakpoints on this process's own children.
 *
 * The targets are P forked processes of T threads each calling clock_gettime (through the vDSO)
 * in a loop; each counts the SIGTRAPs it receives by si_code in a SA_SIGINFO handler (so a stray
 * trap is counted instead of killing it) and its calls. The tracer opens, per target, one
 * PERF_TYPE_BREAKPOINT (X, len 8, inherit, exclude_kernel, sample_period 1) at the vDSO entry of
 * clock_gettime and one at each offset given with -r (its `ret`s, as polystack's bpf backend
 * plans them), with the mechanism -m:
 *   perf     no handler and no ring: the kernel counts the hit (the perf backend's trap path)
 *   bpf      a BPF_PROG_TYPE_PERF_EVENT program (r0 = 0; exit) per event (the bpf backend's)
 *   sigtrap  sigtrap = 1: every hit is a SIGTRAP with si_code TRAP_PERF (the ptrace backend's)
 *   none     no breakpoint at all (control: strays must be 0)
 * and the condition -c, which runs beside the targets for the whole window:
 *   quiet    nothing else
 *   busy     two processes spinning in user space (both vCPUs kept busy)
 *   others   two more breakpoint users in other processes (-P 3: three traced processes)
 *   toggle   the tracer disables and re-enables every event in a tight loop (breakpoints removed
 *            and re-installed while threads are inside the traced function)
 *   migrate  each target thread moves itself to the other CPU every 64 calls
 *   exec     a process forking and exec'ing /bin/true in a loop
 *   wakeups  two processes ping-ponging a byte over pipes (cross-CPU wake-ups, i.e. IPIs and
 *            timer/interrupt exits of the vCPUs)
 * Hits are the events' own counts (read(2), children included), so the rate is per breakpoint
 * hit, not per call.
 *
 * Prints one line: mechanism condition seconds hits calls strays perf_traps other_traps
 * strays_per_million targets_alive first_stray_addr.
 *
 * usage: stray-trap [-m perf|bpf|sigtrap|none] [-c CONDITION] [-s SECONDS] [-t THREADS]
 *                   [-P PROCESSES] [-r RET_OFFSET,...]
 */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <linux/bpf.h>
#include <linux/hw_breakpoint.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef TRAP_PERF
#define TRAP_PERF 6
#endif
#define MAX_PROCS 8
#define MAX_EVENTS 4

struct shared {
  volatile int stop;
  unsigned long long calls[MAX_PROCS];
  unsigned long long brkpt[MAX_PROCS], perf[MAX_PROCS], other[MAX_PROCS];
  uint64_t first_stray_addr;
};

static struct shared *sh;
static int my_index;
static int threads = 2;
static int migrate;

static void die(const char *what) {
  fprintf(stderr, "stray-trap: %s: %s\n", what, strerror(errno));
  exit(1);
}

static void on_sigtrap(int sig, siginfo_t *si, void *uc) {
  (void)sig;
  (void)uc;
  if (si->si_code == TRAP_PERF) {
    __atomic_add_fetch(&sh->perf[my_index], 1, __ATOMIC_RELAXED);
  } else if (si->si_code == TRAP_BRKPT) {
    __atomic_add_fetch(&sh->brkpt[my_index], 1, __ATOMIC_RELAXED);
    uint64_t zero = 0;
    __atomic_compare_exchange_n(&sh->first_stray_addr, &zero, (uint64_t)si->si_addr, 0,
                                __ATOMIC_RELAXED, __ATOMIC_RELAXED);
  } else {
    __atomic_add_fetch(&sh->other[my_index], 1, __ATOMIC_RELAXED);
  }
}

static void *caller(void *arg) {
  long id = (long)arg;
  struct timespec ts;
  unsigned long long n = 0;
  cpu_set_t set;
  while (!sh->stop) {
    clock_gettime(CLOCK_MONOTONIC, &ts);
    if ((++n & 63) == 0) {
      __atomic_add_fetch(&sh->calls[my_index], 64, __ATOMIC_RELAXED);
      if (migrate) {
        CPU_ZERO(&set);
        CPU_SET((int)((id + (n >> 6)) & 1), &set);
        sched_setaffinity(0, sizeof set, &set);
      }
    }
  }
  return NULL;
}

/* A traced process: waits for the go byte so its breakpoints exist before its threads do. */
static void target_main(int index, int go_fd) {
  my_index = index;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_sigtrap;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigaction(SIGTRAP, &sa, NULL);
  char c;
  if (read(go_fd, &c, 1) != 1) _exit(3);
  pthread_t tid[64];
  for (long i = 0; i < threads; i++) pthread_create(&tid[i], NULL, caller, (void *)i);
  for (int i = 0; i < threads; i++) pthread_join(tid[i], NULL);
  _exit(0);
}

static uint64_t vdso_function(const char *name) {
  const unsigned char *img = (const unsigned char *)getauxval(AT_SYSINFO_EHDR);
  if (!img) die("no vDSO");
  const Elf64_Ehdr *eh = (const Elf64_Ehdr *)img;
  const Elf64_Phdr *ph = (const Elf64_Phdr *)(img + eh->e_phoff);
  const Elf64_Dyn *dyn = NULL;
  uint64_t load = 0;
  int have_load = 0;
  for (int i = 0; i < eh->e_phnum; i++) {
    if (ph[i].p_type == PT_DYNAMIC) dyn = (const Elf64_Dyn *)(img + ph[i].p_offset);
    if (ph[i].p_type == PT_LOAD && !have_load) {
      load = ph[i].p_vaddr - ph[i].p_offset;
      have_load = 1;
    }
  }
  const Elf64_Sym *sym = NULL;
  const char *str = NULL;
  const uint32_t *hash = NULL;
  for (; dyn && dyn->d_tag != DT_NULL; dyn++) {
    if (dyn->d_tag == DT_SYMTAB) sym = (const Elf64_Sym *)(img + dyn->d_un.d_ptr - load);
    if (dyn->d_tag == DT_STRTAB) str = (const char *)(img + dyn->d_un.d_ptr - load);
    if (dyn->d_tag == DT_HASH) hash = (const uint32_t *)(img + dyn->d_un.d_ptr - load);
  }
  if (!sym || !str || !hash) die("vDSO without DT_SYMTAB/DT_STRTAB/DT_HASH");
  for (uint32_t i = 0; i < hash[1]; i++) {
    if (sym[i].st_shndx != SHN_UNDEF && strcmp(str + sym[i].st_name, name) == 0)
      return (uint64_t)(uintptr_t)img + sym[i].st_value - load;
  }
  errno = ENOENT;
  die(name);
  return 0;
}

static int load_bpf_program(void) {
  struct bpf_insn insns[2];
  memset(insns, 0, sizeof insns);
  insns[0].code = BPF_ALU64 | BPF_MOV | BPF_K; /* r0 = 0 */
  insns[1].code = BPF_JMP | BPF_EXIT;
  union bpf_attr a;
  memset(&a, 0, sizeof a);
  a.prog_type = BPF_PROG_TYPE_PERF_EVENT;
  a.insns = (uint64_t)(uintptr_t)insns;
  a.insn_cnt = 2;
  a.license = (uint64_t)(uintptr_t)"GPL";
  int fd = (int)syscall(SYS_bpf, BPF_PROG_LOAD, &a, sizeof a);
  if (fd < 0) die("BPF_PROG_LOAD");
  return fd;
}

static int open_breakpoint(pid_t pid, uint64_t addr, int sigtrap) {
  struct perf_event_attr a;
  memset(&a, 0, sizeof a);
  a.size = sizeof a;
  a.type = PERF_TYPE_BREAKPOINT;
  a.bp_type = HW_BREAKPOINT_X;
  a.bp_addr = addr;
  a.bp_len = 8;
  a.sample_period = 1;
  a.inherit = 1;
  a.exclude_kernel = 1;
  a.exclude_hv = 1;
  a.disabled = 1;
  if (sigtrap) {
    a.sigtrap = 1;
    a.remove_on_exec = 1;
    a.sig_data = addr;
  }
  int fd = (int)syscall(SYS_perf_event_open, &a, pid, -1, -1, PERF_FLAG_FD_CLOEXEC);
  if (fd < 0) die("perf_event_open");
  return fd;
}

static pid_t spawn(void (*fn)(void)) {
  pid_t p = fork();
  if (p < 0) die("fork");
  if (p == 0) {
    fn();
    _exit(0);
  }
  return p;
}

static void spin(void) {
  volatile unsigned long x = 0;
  while (!sh->stop) x++;
}

static void exec_loop(void) {
  while (!sh->stop) {
    pid_t p = fork();
    if (p == 0) {
      execl("/bin/true", "true", (char *)NULL);
      _exit(127);
    }
    if (p > 0) waitpid(p, NULL, 0);
  }
}

static int ping[2], pong[2];
static void pinger(void) {
  char c = 0;
  while (!sh->stop) {
    if (write(ping[1], &c, 1) != 1 || read(pong[0], &c, 1) != 1) break;
  }
}
static void ponger(void) {
  char c;
  while (!sh->stop) {
    if (read(ping[0], &c, 1) != 1 || write(pong[1], &c, 1) != 1) break;
  }
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC_RAW, &t);
  return (double)t.tv_sec + t.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
  const char *mech = "bpf", *cond = "quiet", *rets = NULL;
  double seconds = 10;
  int procs = 1, opt;
  while ((opt = getopt(argc, argv, "m:c:s:t:P:r:")) != -1) {
    switch (opt) {
      case 'm': mech = optarg; break;
      case 'c': cond = optarg; break;
      case 's': seconds = atof(optarg); break;
      case 't': threads = atoi(optarg); break;
      case 'P': procs = atoi(optarg); break;
      case 'r': rets = optarg; break;
      default:
        fprintf(stderr, "usage: stray-trap [-m perf|bpf|sigtrap|none] [-c CONDITION] "
                        "[-s SECONDS] [-t THREADS] [-P PROCESSES] [-r RET_OFFSET,...]\n");
        return 2;
    }
  }
  if (strcmp(cond, "others") == 0 && procs < 3) procs = 3;
  if (procs < 1 || procs > MAX_PROCS || threads < 1 || threads > 64) {
    fprintf(stderr, "stray-trap: 1-%d processes of 1-64 threads\n", MAX_PROCS);
    return 2;
  }
  migrate = strcmp(cond, "migrate") == 0;
  sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (sh == MAP_FAILED) die("mmap");

  /* Every forked child shares this process's vDSO mapping, so its addresses are ours. */
  uint64_t entry = vdso_function("__vdso_clock_gettime");
  uint64_t base = getauxval(AT_SYSINFO_EHDR);
  uint64_t addrs[MAX_EVENTS] = {entry};
  int naddr = 1;
  for (char *s = rets ? strdup(rets) : NULL, *tok = s ? strtok(s, ",") : NULL;
       tok && naddr < MAX_EVENTS; tok = strtok(NULL, ","))
    addrs[naddr++] = base + strtoull(tok, NULL, 0);

  int none = strcmp(mech, "none") == 0;
  int sigtrap = strcmp(mech, "sigtrap") == 0;
  int prog = strcmp(mech, "bpf") == 0 ? load_bpf_program() : -1;
  if (!none && !sigtrap && prog < 0 && strcmp(mech, "perf") != 0) {
    fprintf(stderr, "stray-trap: unknown mechanism %s\n", mech);
    return 2;
  }

  pid_t helpers[4];
  int nhelpers = 0;
  if (strcmp(cond, "busy") == 0) {
    helpers[nhelpers++] = spawn(spin);
    helpers[nhelpers++] = spawn(spin);
  } else if (strcmp(cond, "exec") == 0) {
    helpers[nhelpers++] = spawn(exec_loop);
  } else if (strcmp(cond, "wakeups") == 0) {
    if (pipe(ping) || pipe(pong)) die("pipe");
    helpers[nhelpers++] = spawn(pinger);
    helpers[nhelpers++] = spawn(ponger);
  } else if (strcmp(cond, "quiet") && strcmp(cond, "others") && strcmp(cond, "toggle")
             && strcmp(cond, "migrate")) {
    fprintf(stderr, "stray-trap: unknown condition %s\n", cond);
    return 2;
  }

  pid_t target[MAX_PROCS];
  int go[MAX_PROCS][2];
  int fds[MAX_PROCS * MAX_EVENTS], nfds = 0;
  for (int p = 0; p < procs; p++) {
    if (pipe(go[p])) die("pipe");
    target[p] = fork();
    if (target[p] < 0) die("fork");
    if (target[p] == 0) {
      close(go[p][1]);
      target_main(p, go[p][0]);
    }
    close(go[p][0]);
    for (int i = 0; i < naddr && !none; i++) {
      int fd = open_breakpoint(target[p], addrs[i], sigtrap);
      if (prog >= 0 && ioctl(fd, PERF_EVENT_IOC_SET_BPF, prog)) die("PERF_EVENT_IOC_SET_BPF");
      if (ioctl(fd, PERF_EVENT_IOC_ENABLE, 0)) die("PERF_EVENT_IOC_ENABLE");
      fds[nfds++] = fd;
    }
  }
  for (int p = 0; p < procs; p++) {
    if (write(go[p][1], "g", 1) != 1) die("go");
    close(go[p][1]);
  }

  double end = now() + seconds;
  unsigned long long toggles = 0;
  while (now() < end) {
    if (strcmp(cond, "toggle") == 0) {
      for (int i = 0; i < nfds; i++) ioctl(fds[i], PERF_EVENT_IOC_DISABLE, 0);
      for (int i = 0; i < nfds; i++) ioctl(fds[i], PERF_EVENT_IOC_ENABLE, 0);
      toggles++;
    } else {
      usleep(20000);
    }
  }
  unsigned long long hits = 0;
  for (int i = 0; i < nfds; i++) {
    uint64_t v = 0;
    if (read(fds[i], &v, sizeof v) == sizeof v) hits += v;
    close(fds[i]);
  }
  sh->stop = 1;
  int alive = 0;
  for (int p = 0; p < procs; p++) {
    int st;
    if (waitpid(target[p], &st, 0) == target[p] && WIFEXITED(st) && WEXITSTATUS(st) == 0) alive++;
  }
  for (int h = 0; h < nhelpers; h++) {
    kill(helpers[h], SIGKILL);
    waitpid(helpers[h], NULL, 0);
  }
  unsigned long long calls = 0, strays = 0, perf = 0, other = 0;
  for (int p = 0; p < procs; p++) {
    calls += sh->calls[p];
    strays += sh->brkpt[p];
    perf += sh->perf[p];
    other += sh->other[p];
  }
  uint64_t fa = sh->first_stray_addr;
  printf("%s %s %.1f hits=%llu calls=%llu strays=%llu perf_traps=%llu other_traps=%llu "
         "per_million=%.3f alive=%d/%d toggles=%llu first_stray=%s0x%llx\n",
         mech, cond, seconds, hits, calls, strays, perf, other,
         hits ? strays * 1e6 / (double)hits : 0.0, alive, procs, toggles,
         fa ? (fa == entry ? "entry:" : "other:") : "", (unsigned long long)(fa ? fa - base : 0));
  return 0;
}
