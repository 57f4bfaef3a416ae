/*
 * A mostly sleeping process: ROUNDS times, burns BURN_MS of its own CPU time (not wall time) in
 * main -> burn, then sleeps SLEEP_MS; at the end prints "cpu_ns N", its CPU time from
 * getrusage(2) (the kernel's count, not a profiler's), and exits 0.
 * Usage: mostly_sleeping ROUNDS BURN_MS SLEEP_MS
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

static volatile double sink;

static double cpu_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void burn(double seconds) {
  double end = cpu_seconds() + seconds;
  while (cpu_seconds() < end) {
    for (int i = 0; i < 10000; i++) sink += i * 0.5;
  }
  __asm__ volatile("");
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: mostly_sleeping ROUNDS BURN_MS SLEEP_MS\n");
    return 2;
  }
  int rounds = atoi(argv[1]);
  double burn_s = atoi(argv[2]) / 1000.0;
  long sleep_ns = atol(argv[3]) * 1000000L;
  for (int r = 0; r < rounds; r++) {
    burn(burn_s);
    struct timespec pause = {sleep_ns / 1000000000L, sleep_ns % 1000000000L};
    nanosleep(&pause, NULL);
  }
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  long long us = (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000LL
      + ru.ru_utime.tv_usec + ru.ru_stime.tv_usec;
  printf("cpu_ns %lld\n", us * 1000LL);
  return 0;
}
