/*
 * The floor for stop-the-world ptrace sampling on this machine: the same mechanism as
 * polystack's ptrace sampler with nothing else around it. Launches COMMAND, seizes it, and per
 * sample (RATE per second, on the main thread):
 *
 *   PTRACE_INTERRUPT, waitpid(__WALL) for the interrupt stop, PTRACE_GETREGS,
 *   process_vm_readv of STACK bytes at rsp, PTRACE_CONT
 *
 * The pause is measured with CLOCK_MONOTONIC from before the interrupt to after the CONT.
 * Prints "pause per sample: ..." on stderr and, with -j FILE, the same figures as JSON in the
 * shape of `polystack record --stats-json`.
 *
 * With -v it also prints the median and p99 of each phase (interrupt, wait, getregs, read, cont).
 *
 * usage: ptrace_floor [-r HZ] [-b STACK_BYTES] [-j FILE] [-v] -- COMMAND [ARGS...]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* Same rule as polystack's PauseStats: the element at ceil(q * n) - 1 of the sorted values. */
static uint64_t quantile(const uint64_t *sorted, size_t n, double q) {
  if (n == 0) return 0;
  double idx = q * (double)n;
  long i = (long)idx;
  if ((double)i < idx) i++;
  i -= 1;
  if (i < 0) i = 0;
  if ((size_t)i >= n) i = (long)n - 1;
  return sorted[i];
}

int main(int argc, char **argv) {
  int rate = 99;
  size_t stack_bytes = 16384;
  const char *json = NULL;
  int verbose = 0;
  int opt;
  while ((opt = getopt(argc, argv, "+r:b:j:v")) != -1) {
    switch (opt) {
      case 'v': verbose = 1; break;
      case 'r': rate = atoi(optarg); break;
      case 'b': stack_bytes = (size_t)atol(optarg); break;
      case 'j': json = optarg; break;
      default:
        fprintf(stderr, "usage: ptrace_floor [-r HZ] [-b BYTES] [-j FILE] [-v] -- COMMAND [ARGS...]\n");
        return 2;
    }
  }
  if (optind >= argc || rate <= 0) {
    fprintf(stderr, "ptrace_floor: give a command after --\n");
    return 2;
  }

  /* The child waits on a pipe until it is seized, so it is traced from its exec on. */
  int go[2];
  if (pipe(go) != 0) { perror("pipe"); return 1; }
  pid_t pid = fork();
  if (pid < 0) { perror("fork"); return 1; }
  if (pid == 0) {
    char c;
    close(go[1]);
    if (read(go[0], &c, 1) != 1) _exit(126);
    close(go[0]);
    execvp(argv[optind], &argv[optind]);
    perror(argv[optind]);
    _exit(127);
  }
  close(go[0]);
  if (ptrace(PTRACE_SEIZE, pid, 0, (void *)(long)PTRACE_O_EXITKILL) != 0) {
    perror("PTRACE_SEIZE");
    kill(pid, SIGKILL);
    return 1;
  }
  if (write(go[1], "x", 1) != 1) { perror("write"); return 1; }
  close(go[1]);

  size_t cap = 1 << 16, n = 0;
  uint64_t *pauses = malloc(cap * sizeof *pauses);
  /* Per-phase times (interrupt, wait, getregs, read, cont) for the -v breakdown. */
  enum { PH_INT, PH_WAIT, PH_REGS, PH_READ, PH_CONT, PHASES };
  static const char *phase_names[PHASES] = {"interrupt", "wait", "getregs", "read", "cont"};
  uint64_t *phase[PHASES];
  for (int i = 0; i < PHASES; i++) phase[i] = malloc(cap * sizeof(uint64_t));
  uint64_t tp[PHASES + 1];
  char *stack = malloc(stack_bytes);
  long lost = 0;
  int exit_status = 0;
  uint64_t period = 1000000000u / (uint64_t)rate;
  struct timespec next;
  clock_gettime(CLOCK_MONOTONIC, &next);

  for (;;) {
    /* Sleep until the next tick; reap the child if it exited in the meantime. */
    next.tv_nsec += (long)period;
    while (next.tv_nsec >= 1000000000L) { next.tv_nsec -= 1000000000L; next.tv_sec++; }
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL) == EINTR) {}
    int st;
    pid_t r = waitpid(pid, &st, __WALL | WNOHANG);
    if (r == pid && (WIFEXITED(st) || WIFSIGNALED(st))) { exit_status = st; break; }
    if (r == pid && WIFSTOPPED(st)) {
      /* A stop we did not ask for (signal delivery, group stop): pass it on. */
      int sig = (st >> 16) == 0 ? WSTOPSIG(st) : 0;
      ptrace(PTRACE_CONT, pid, 0, (void *)(long)sig);
      continue;
    }

    uint64_t t0 = now_ns();
    tp[0] = t0;
    if (ptrace(PTRACE_INTERRUPT, pid, 0, 0) != 0) {
      if (errno == ESRCH) { lost++; continue; }
      perror("PTRACE_INTERRUPT");
      break;
    }
    tp[1] = now_ns();
    int done = 0;
    for (;;) {
      if (waitpid(pid, &st, __WALL) != pid) { perror("waitpid"); done = 1; break; }
      if (WIFEXITED(st) || WIFSIGNALED(st)) { exit_status = st; done = 1; break; }
      if (WIFSTOPPED(st) && (st >> 16) == PTRACE_EVENT_STOP) break; /* the interrupt stop */
      int sig = (st >> 16) == 0 ? WSTOPSIG(st) : 0;
      ptrace(PTRACE_CONT, pid, 0, (void *)(long)sig);
    }
    if (done) break;
    tp[2] = now_ns();
    struct user_regs_struct regs;
    if (ptrace(PTRACE_GETREGS, pid, 0, &regs) != 0) { perror("PTRACE_GETREGS"); break; }
    tp[3] = now_ns();
    struct iovec local = {stack, stack_bytes};
    struct iovec remote = {(void *)regs.rsp, stack_bytes};
    if (process_vm_readv(pid, &local, 1, &remote, 1, 0) < 0) lost++;
    tp[4] = now_ns();
    if (ptrace(PTRACE_CONT, pid, 0, 0) != 0) { perror("PTRACE_CONT"); break; }
    uint64_t t1 = now_ns();
    tp[5] = t1;
    if (n == cap) {
      cap *= 2;
      pauses = realloc(pauses, cap * sizeof *pauses);
      for (int i = 0; i < PHASES; i++) phase[i] = realloc(phase[i], cap * sizeof(uint64_t));
    }
    for (int i = 0; i < PHASES; i++) phase[i][n] = tp[i + 1] - tp[i];
    pauses[n++] = t1 - t0;
  }

  uint64_t total = 0;
  for (size_t i = 0; i < n; i++) total += pauses[i];
  qsort(pauses, n, sizeof *pauses, cmp_u64);
  uint64_t mean = n ? total / n : 0;
  uint64_t median = quantile(pauses, n, 0.5), p99 = quantile(pauses, n, 0.99);
  uint64_t max = n ? pauses[n - 1] : 0;
  fprintf(stderr,
          "ptrace_floor: %zu samples at %d Hz; pause per sample: mean %llu us, median %llu us,"
          " p99 %llu us, max %llu us\n",
          n, rate, (unsigned long long)(mean / 1000), (unsigned long long)(median / 1000),
          (unsigned long long)(p99 / 1000), (unsigned long long)(max / 1000));
  if (verbose) {
    fprintf(stderr, "ptrace_floor: pause breakdown over %zu samples (median/p99 us):", n);
    for (int i = 0; i < PHASES; i++) {
      qsort(phase[i], n, sizeof(uint64_t), cmp_u64);
      fprintf(stderr, "%s %s %.1f/%.1f", i ? "," : "", phase_names[i],
              quantile(phase[i], n, 0.5) / 1e3, quantile(phase[i], n, 0.99) / 1e3);
    }
    fprintf(stderr, "\n");
  }
  if (json) {
    FILE *f = fopen(json, "w");
    if (!f) { perror(json); return 1; }
    fprintf(f,
            "{\"samples\": %zu, \"rate_hz\": %d, \"pause_ns\": {\"count\": %zu, \"mean\": %llu,"
            " \"median\": %llu, \"p99\": %llu, \"max\": %llu}, \"losses\": {\"read_failed\": %ld}}\n",
            n, rate, n, (unsigned long long)mean, (unsigned long long)median,
            (unsigned long long)p99, (unsigned long long)max, lost);
    fclose(f);
  }
  if (WIFEXITED(exit_status)) return WEXITSTATUS(exit_status);
  return 128 + WTERMSIG(exit_status);
}
