/*
 * Two busy threads with known call chains, for checking complete stacks. Built by the tests with
 * -O2 -fomit-frame-pointer, so only CFI (.eh_frame) unwinding can recover these chains.
 *
 *   main thread:          main -> top_a -> mid_a -> leaf_a   (busy loop)
 *   thread "worker-b":  worker -> top_b -> mid_b -> leaf_b   (busy loop)
 *
 * Usage: two_threads SECONDS [EXIT_CODE]. Prints "done" and returns EXIT_CODE (default 0).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile double sink;
static double deadline;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* noinline plus an empty asm after each call: no inlining and no tail calls, so every function
 * keeps a frame of its own even at -O2. */
__attribute__((noinline)) void leaf_a(void) {
  while (now() < deadline) {
    for (int i = 0; i < 200000; i++) sink += i * 0.5;
  }
}
__attribute__((noinline)) void mid_a(void) { leaf_a(); __asm__ volatile(""); }
__attribute__((noinline)) void top_a(void) { mid_a(); __asm__ volatile(""); }

__attribute__((noinline)) void leaf_b(void) {
  while (now() < deadline) {
    for (int i = 0; i < 200000; i++) sink += i * 0.25;
  }
}
__attribute__((noinline)) void mid_b(void) { leaf_b(); __asm__ volatile(""); }
__attribute__((noinline)) void top_b(void) { mid_b(); __asm__ volatile(""); }

__attribute__((noinline)) static void *worker(void *arg) {
  (void)arg;
  top_b();
  __asm__ volatile("");
  return NULL;
}

int main(int argc, char **argv) {
  double seconds = argc > 1 ? atof(argv[1]) : 3;
  int code = argc > 2 ? atoi(argv[2]) : 0;
  deadline = now() + seconds;
  pthread_t t;
  if (pthread_create(&t, NULL, worker, NULL) != 0) {
    perror("pthread_create");
    return 100;
  }
  pthread_setname_np(t, "worker-b");
  top_a();
  pthread_join(t, NULL);
  printf("done\n");
  fflush(stdout);
  return code;
}
