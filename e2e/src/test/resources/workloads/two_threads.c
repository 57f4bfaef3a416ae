/*
 * Two busy threads with known call chains, for checking complete stacks. Built by the tests with
 * -O2 -fomit-frame-pointer, so only CFI (.eh_frame) unwinding can recover these chains.
 *
 *   main thread:          main -> top_a -> mid_a -> leaf_a   (busy loop)
 *   thread "worker-b":  worker -> top_b -> mid_b -> leaf_b   (busy loop)
 *
 * Usage: two_threads SECONDS|stdin [EXIT_CODE]. Runs for SECONDS, or with "stdin" until stdin
 * reaches EOF (watched by a third thread, "stdin-watch", that sleeps in read(2) and so is never
 * on CPU while the busy threads run). Prints "done" and returns EXIT_CODE (default 0).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile double sink;
static double deadline;
static volatile int stop_now;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* noinline plus an empty asm after each call: no inlining and no tail calls, so every function
 * keeps a frame of its own even at -O2. */
__attribute__((noinline)) void leaf_a(void) {
  while (!stop_now && now() < deadline) {
    for (int i = 0; i < 200000; i++) sink += i * 0.5;
  }
}
__attribute__((noinline)) void mid_a(void) { leaf_a(); __asm__ volatile(""); }
__attribute__((noinline)) void top_a(void) { mid_a(); __asm__ volatile(""); }

__attribute__((noinline)) void leaf_b(void) {
  while (!stop_now && now() < deadline) {
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

static void *watch_stdin(void *arg) {
  char buf[64];
  (void)arg;
  while (read(0, buf, sizeof buf) > 0) {
  }
  stop_now = 1;
  return NULL;
}

int main(int argc, char **argv) {
  int until_eof = argc > 1 && strcmp(argv[1], "stdin") == 0;
  double seconds = argc > 1 && !until_eof ? atof(argv[1]) : 3;
  int code = argc > 2 ? atoi(argv[2]) : 0;
  deadline = until_eof ? 1e300 : now() + seconds;
  pthread_t t;
  if (until_eof) {
    pthread_t w;
    if (pthread_create(&w, NULL, watch_stdin, NULL) != 0) {
      perror("pthread_create");
      return 100;
    }
    pthread_setname_np(w, "stdin-watch");
    pthread_detach(w);
  }
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
