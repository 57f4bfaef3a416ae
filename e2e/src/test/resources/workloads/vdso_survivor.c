/*
 * Target of the vdso kill trials (VdsoKillTest): three threads call every vDSO function glibc
 * routes through the vDSO (clock_gettime with CLOCK_MONOTONIC and CLOCK_REALTIME, gettimeofday,
 * time, sched_getcpu, clock_getres) back to back, with a short sleep every 64 rounds so the
 * machine is not saturated, and check each result (success, monotonic time never going back,
 * a cpu number in range).
 *
 * SIGTRAPs are caught and counted by kind instead of killing the process, so a trial can tell
 * the harm polystack could do from the VM's spurious breakpoint traps (docs/vdso.md):
 * - perf: si_code TRAP_PERF, a SIGTRAP of polystack's own sigtrap breakpoints that reached the
 *   target (the ptrace backend must suppress every one of them);
 * - after: TRAP_BRKPT after the test wrote "gone" on stdin (polystack has exited, so nothing may
 *   be armed: a breakpoint left armed raises these at every call);
 * - brkpt: TRAP_BRKPT before that, i.e. while polystack's breakpoints were armed: the platform's
 *   spurious traps, which only a ptrace tracer can suppress;
 * - other: any other SIGTRAP (from kill(2), a single step, ...).
 * A process with SIGTRAP at its default action dies of any of them.
 *
 * Prints "ready" once the threads run; ends when stdin reaches EOF and then prints
 * "vdso_survivor ok rounds=N bad=0 sigtrap_perf=0 sigtrap_after=0 sigtrap_other=0
 * sigtrap_brkpt=K" and exits 0; "BAD" and exit 1 when a result was wrong or a perf, after or
 * other SIGTRAP came (K, the spurious count, is for the test to judge by backend).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define THREADS 3
#ifndef TRAP_PERF
#define TRAP_PERF 6
#endif

static atomic_int gone;
static atomic_long trap_perf, trap_after, trap_brkpt, trap_other;

static void on_sigtrap(int sig, siginfo_t *info, void *context) {
  (void)sig;
  (void)context;
  if (info->si_code == TRAP_PERF) {
    atomic_fetch_add(&trap_perf, 1);
  } else if (info->si_code == TRAP_BRKPT) {
    atomic_fetch_add(atomic_load(&gone) ? &trap_after : &trap_brkpt, 1);
  } else {
    atomic_fetch_add(&trap_other, 1);
  }
}

static atomic_int stop;
static atomic_long rounds;
static atomic_long bad;

static long long ns(const struct timespec *t) { return t->tv_sec * 1000000000LL + t->tv_nsec; }

static void *caller(void *arg) {
  (void)arg;
  struct timespec last = {0, 0};
  long n = 0;
  long ncpu = sysconf(_SC_NPROCESSORS_CONF);
  while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
    struct timespec mono, real, res;
    struct timeval tv;
    int ok = clock_gettime(CLOCK_MONOTONIC, &mono) == 0
        && clock_gettime(CLOCK_REALTIME, &real) == 0
        && gettimeofday(&tv, NULL) == 0
        && time(NULL) > 0
        && clock_getres(CLOCK_MONOTONIC, &res) == 0;
    int cpu = sched_getcpu();
    if (!ok || ns(&mono) < ns(&last) || cpu < 0 || (ncpu > 0 && cpu >= ncpu)) {
      atomic_fetch_add(&bad, 1);
    }
    last = mono;
    if (++n % 64 == 0) {
      usleep(200);
    }
  }
  atomic_fetch_add(&rounds, n);
  return NULL;
}

int main(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_sigtrap;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  if (sigaction(SIGTRAP, &sa, NULL) != 0) {
    perror("sigaction");
    return 2;
  }
  pthread_t t[THREADS];
  for (int i = 0; i < THREADS; i++) {
    if (pthread_create(&t[i], NULL, caller, NULL) != 0) {
      perror("pthread_create");
      return 2;
    }
  }
  printf("ready\n");
  fflush(stdout);
  char line[256];
  while (fgets(line, sizeof line, stdin) != NULL) {
    if (strncmp(line, "gone", 4) == 0) {
      atomic_store(&gone, 1);
    }
  }
  atomic_store(&stop, 1);
  for (int i = 0; i < THREADS; i++) {
    pthread_join(t[i], NULL);
  }
  long b = atomic_load(&bad);
  long harm = atomic_load(&trap_perf) + atomic_load(&trap_after) + atomic_load(&trap_other);
  int ok = b == 0 && harm == 0;
  printf("vdso_survivor %s rounds=%ld bad=%ld sigtrap_perf=%ld sigtrap_after=%ld"
      " sigtrap_other=%ld sigtrap_brkpt=%ld\n", ok ? "ok" : "BAD", atomic_load(&rounds), b,
      atomic_load(&trap_perf), atomic_load(&trap_after), atomic_load(&trap_other),
      atomic_load(&trap_brkpt));
  fflush(stdout);
  return ok ? 0 : 1;
}
