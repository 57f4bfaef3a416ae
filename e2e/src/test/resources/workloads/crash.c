/*
 * Busy for SECONDS in main -> spin, then dies of a signal: "segv" raises SIGSEGV, "abort" calls
 * abort() (SIGABRT). Usage: crash SECONDS segv|abort
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static volatile double sink;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void spin(double seconds) {
  double end = now() + seconds;
  while (now() < end) {
    for (int i = 0; i < 200000; i++) sink += i * 0.5;
  }
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: crash SECONDS segv|abort\n");
    return 2;
  }
  spin(atof(argv[1]));
  if (strcmp(argv[2], "abort") == 0) {
    abort();
  }
  raise(SIGSEGV);
  return 0; /* not reached: SIGSEGV's default action terminates */
}
