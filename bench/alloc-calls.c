/*
 * Allocator calls per second, for docs/allocations.md: malloc(64) + free in a loop for SECONDS
 * of this thread's CPU time, after a line on stdin (a profiler attaches meanwhile). Prints
 * "calls_per_s N" (malloc and free each count as one call), the CPU seconds used and the calls
 * made (what a profiler that records every call should have recorded).
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double cpu_seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec + t.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
  double seconds = argc > 1 ? atof(argv[1]) : 3;
  char line[64];
  volatile long sink = 0;

  printf("ready\n");
  fflush(stdout);
  if (!fgets(line, sizeof line, stdin)) {
    return 3;
  }
  long calls = 0;
  double start = cpu_seconds(), now = start;
  while (now - start < seconds) {
    for (int i = 0; i < 1000; i++) {
      char *p = malloc(64);
      p[0] = 1;
      sink += (long)p;
      free(p);
    }
    calls += 2000;
    now = cpu_seconds();
  }
  printf("calls_per_s %.0f cpu_s %.3f calls %ld\n", calls / (now - start), now - start, calls);
  return 0;
}
