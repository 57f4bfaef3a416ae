/*
 * CPU-bound benchmark target with a known call chain, built with -O2 -fomit-frame-pointer so
 * that only CFI (.eh_frame) can unwind it:
 *
 *   main -> run_fixed / thread_main -> stage_outer -> stage_middle -> stage_inner (hot loop)
 *
 * Modes:
 *   workload -n ITERS [-o FILE]      one thread, a fixed amount of work; writes the elapsed wall
 *                                    time ("elapsed_ns N") to FILE (default: stdout)
 *   workload -t THREADS -s SECONDS   THREADS threads, each busy in the chain for SECONDS
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

/* Written after every call so the compiler can neither drop the work nor turn calls into tail
 * calls (which would remove the caller's frame from the chain). */
volatile uint64_t sink;

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

NOINLINE uint64_t stage_inner(uint64_t x) {
  for (int i = 0; i < 4000; i++) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    x += (uint64_t)i * 0x9e3779b97f4a7c15u;
  }
  return x;
}

NOINLINE uint64_t stage_middle(uint64_t x) {
  uint64_t acc = 0;
  for (int i = 0; i < 10; i++) {
    acc += stage_inner(x + (uint64_t)i);
    sink = acc;
  }
  return acc;
}

/* One unit of work: ~40k inner iterations. */
NOINLINE uint64_t stage_outer(uint64_t x) {
  uint64_t acc = 0;
  for (int i = 0; i < 4; i++) {
    acc ^= stage_middle(x + (uint64_t)i);
    sink = acc;
  }
  return acc + 1;
}

NOINLINE uint64_t run_fixed(long iterations) {
  uint64_t acc = 88172645463325252u;
  for (long i = 0; i < iterations; i++) {
    acc = stage_outer(acc);
    sink = acc;
  }
  return acc;
}

static double run_seconds;

NOINLINE void *thread_main(void *arg) {
  uint64_t acc = (uint64_t)(uintptr_t)arg * 0x2545f4914f6cdd1du + 1;
  uint64_t end = now_ns() + (uint64_t)(run_seconds * 1e9);
  while (now_ns() < end) {
    for (int i = 0; i < 16; i++) {
      acc = stage_outer(acc);
      sink = acc;
    }
  }
  return (void *)(uintptr_t)(acc & 1);
}

static void usage(void) {
  fprintf(stderr, "usage: workload -n ITERATIONS [-o FILE] | workload -t THREADS -s SECONDS\n");
  exit(2);
}

int main(int argc, char **argv) {
  long iterations = -1;
  int threads = 0;
  const char *out = NULL;
  int opt;
  while ((opt = getopt(argc, argv, "n:t:s:o:")) != -1) {
    switch (opt) {
      case 'n': iterations = atol(optarg); break;
      case 't': threads = atoi(optarg); break;
      case 's': run_seconds = atof(optarg); break;
      case 'o': out = optarg; break;
      default: usage();
    }
  }
  if (iterations >= 0) {
    uint64_t t0 = now_ns();
    uint64_t r = run_fixed(iterations);
    uint64_t elapsed = now_ns() - t0;
    FILE *f = out ? fopen(out, "w") : stdout;
    if (!f) {
      perror(out);
      return 1;
    }
    fprintf(f, "elapsed_ns %llu\nresult %llu\n", (unsigned long long)elapsed,
            (unsigned long long)r);
    if (out) fclose(f);
    return 0;
  }
  if (threads <= 0 || run_seconds <= 0) usage();
  pthread_t *ids = calloc((size_t)threads, sizeof *ids);
  for (int i = 0; i < threads; i++) {
    if (pthread_create(&ids[i], NULL, thread_main, (void *)(uintptr_t)(i + 1)) != 0) {
      perror("pthread_create");
      return 1;
    }
  }
  for (int i = 0; i < threads; i++) pthread_join(ids[i], NULL);
  return 0;
}
