/*
 * Calls per second of a probed function, for docs/benchmarks.md ("Probe monitors"):
 * probe_counted() in a loop for SECONDS of this thread's CPU time (user and system: a uprobe's
 * trap is charged to the thread that hits it), after a line on stdin (a probe attaches
 * meanwhile). Prints "calls_per_s N calls N".
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

__attribute__((noinline, used)) long probe_counted(long x) {
  __asm__ volatile("" : "+r"(x));
  return x + 1;
}

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
      sink += probe_counted(i);
    }
    calls += 1000;
    now = cpu_seconds();
  }
  printf("calls_per_s %.0f calls %ld\n", calls / (now - start), calls);
  return 0;
}
