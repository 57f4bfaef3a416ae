/*
 * Test workload for perf-mode sampling: known call chains on two threads, built with
 * -O2 -fomit-frame-pointer so only CFI can unwind them.
 *
 *   perf_chains SECONDS [EXIT_CODE] [LATE_MS]
 *
 * main -> top_a -> mid_a -> leaf_a spins on the main thread; a thread named "worker-b" runs
 * worker -> top_b -> mid_b -> leaf_b. With LATE_MS > 0 a third thread "late-c" (late -> top_c ->
 * leaf_c) starts after that many milliseconds. Prints "ready" once the threads run and exits
 * with EXIT_CODE once each of main and worker-b has run SECONDS of its own CPU time (0: never):
 * CPU time, not wall time, so a loaded host delays the exit instead of thinning the samples.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;
static double cpu_seconds;
static int late_ms;

static int expired(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return cpu_seconds > 0 && ts.tv_sec + ts.tv_nsec / 1e9 >= cpu_seconds;
}

#define NOINLINE __attribute__((noinline))
#define SPIN(n) for (unsigned long i = 0; i < (n); i++) { sink += i * 7 + (sink >> 3); }
#define BARRIER __asm__ volatile("" ::: "memory")

NOINLINE void leaf_a(void) { while (!expired()) { SPIN(200000); } BARRIER; }
NOINLINE void mid_a(void) { leaf_a(); BARRIER; }
NOINLINE void top_a(void) { mid_a(); BARRIER; }

NOINLINE void leaf_b(void) { while (!expired()) { SPIN(200000); } BARRIER; }
NOINLINE void mid_b(void) { leaf_b(); BARRIER; }
NOINLINE void top_b(void) { mid_b(); BARRIER; }

NOINLINE void leaf_c(void) { while (!expired()) { SPIN(200000); } BARRIER; }
NOINLINE void top_c(void) { leaf_c(); BARRIER; }

NOINLINE void *worker(void *arg) { (void)arg; top_b(); BARRIER; return NULL; }
NOINLINE void *late(void *arg) { (void)arg; top_c(); BARRIER; return NULL; }

static void *starter(void *arg) {
  (void)arg;
  usleep(late_ms * 1000);
  pthread_t t;
  pthread_create(&t, NULL, late, NULL);
  pthread_setname_np(t, "late-c");
  pthread_join(t, NULL);
  return NULL;
}

int main(int argc, char **argv) {
  double seconds = argc > 1 ? atof(argv[1]) : 0;
  int code = argc > 2 ? atoi(argv[2]) : 0;
  late_ms = argc > 3 ? atoi(argv[3]) : 0;
  cpu_seconds = seconds;
  pthread_t b;
  pthread_create(&b, NULL, worker, NULL);
  pthread_setname_np(b, "worker-b");
  if (late_ms > 0) {
    pthread_t s;
    pthread_create(&s, NULL, starter, NULL);
    pthread_detach(s);
  }
  printf("ready pid=%d\n", getpid());
  fflush(stdout);
  top_a();
  pthread_join(b, NULL);
  return code;
}
