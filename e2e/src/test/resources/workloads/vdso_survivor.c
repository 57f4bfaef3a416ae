/*
 * Target of the vdso kill trials (VdsoKillTest): three threads call every vDSO function glibc
 * routes through the vDSO (clock_gettime with CLOCK_MONOTONIC and CLOCK_REALTIME, gettimeofday,
 * time, sched_getcpu, clock_getres) back to back, with a short sleep every 64 rounds so the
 * machine is not saturated, and check each result (success, monotonic time never going back,
 * a cpu number in range). SIGTRAP keeps its default action: a breakpoint left armed after the
 * tracer is gone kills this process ("killed by signal 5"), which is what the trials look for.
 *
 * Prints "ready" once the threads run; ends when stdin reaches EOF and then prints
 * "vdso_survivor ok rounds=N bad=0" and exits 0 (exit 1 with bad > 0).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define THREADS 3

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
  pthread_t t[THREADS];
  for (int i = 0; i < THREADS; i++) {
    if (pthread_create(&t[i], NULL, caller, NULL) != 0) {
      perror("pthread_create");
      return 2;
    }
  }
  printf("ready\n");
  fflush(stdout);
  char buf[256];
  while (fread(buf, 1, sizeof buf, stdin) > 0) {
  }
  atomic_store(&stop, 1);
  for (int i = 0; i < THREADS; i++) {
    pthread_join(t[i], NULL);
  }
  long b = atomic_load(&bad);
  printf("vdso_survivor %s rounds=%ld bad=%ld\n", b == 0 ? "ok" : "BAD", atomic_load(&rounds), b);
  fflush(stdout);
  return b == 0 ? 0 : 1;
}
