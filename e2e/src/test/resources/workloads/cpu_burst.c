/*
 * Burns MILLIS milliseconds of its own CPU time (not wall time) in main -> burst, then exits:
 * a short-lived process whose number of ticks does not depend on how loaded the machine is.
 * Usage: cpu_burst MILLIS
 */
#include <stdlib.h>
#include <time.h>

static volatile double sink;

static double cpu_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void burst(double seconds) {
  double end = cpu_seconds() + seconds;
  while (cpu_seconds() < end) {
    for (int i = 0; i < 10000; i++) sink += i * 0.5;
  }
  __asm__ volatile("");
}

int main(int argc, char **argv) {
  burst((argc > 1 ? atoi(argv[1]) : 100) / 1000.0);
  return 0;
}
