/*
 * N busy threads for tick-time capture at scale: each spins in spin_leaf for SECONDS, started
 * after the program starts (so a sampler must cover threads it never saw at attach).
 * Usage: busy_threads N SECONDS. Prints "done" when every thread finished.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile double sink;
static double seconds;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static void spin_leaf(double until) {
  double x = 1.0;
  while (now() < until) {
    for (int i = 0; i < 10000; i++) {
      x = x * 1.0000001 + 0.5;
    }
    sink = x;
  }
  __asm__ volatile("");
}

static void *spin(void *arg) {
  (void)arg;
  spin_leaf(now() + seconds);
  return NULL;
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: busy_threads N SECONDS\n");
    return 2;
  }
  int n = atoi(argv[1]);
  seconds = atof(argv[2]);
  if (n < 1 || n > 1024 || seconds <= 0) {
    fprintf(stderr, "busy_threads: N must be 1..1024 and SECONDS > 0\n");
    return 2;
  }
  pthread_t *threads = calloc(n, sizeof *threads);
  for (int i = 0; i < n; i++) {
    if (pthread_create(&threads[i], NULL, spin, NULL) != 0) {
      perror("pthread_create");
      return 1;
    }
  }
  for (int i = 0; i < n; i++) {
    pthread_join(threads[i], NULL);
  }
  puts("done");
  return 0;
}
