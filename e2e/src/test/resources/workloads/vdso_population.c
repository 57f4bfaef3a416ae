/*
 * The population of issue 17, with the program's own tally: every thread makes R rounds of
 *   clock_gettime(CLOCK_MONOTONIC) through a pointer from dlsym(linux-vdso.so.1),
 *   clock_gettime(CLOCK_REALTIME) through libc,
 *   the same two with an invalid clock id (both return EINVAL),
 *   and every fourth round gettimeofday, time and getcpu through vDSO pointers.
 * Two call sites per clock_gettime (the program's and libc's), one for each of the others, so
 * a tracer that keeps one return slot per call site runs out of slots.
 *
 * Prints, flushed at once:
 *   "THREAD pid tid cg_ok cg_einval gettimeofday time getcpu"   after a thread's rounds
 *   "DONE"                                                     before exit
 *
 * Usage:
 *   vdso_population T R [WAVES]   sleeps 200 ms, then WAVES (1) waves of T threads, each R
 *                                 rounds; a wave is joined before the next starts, so with many
 *                                 waves of one thread each, threads are short-lived
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define BAD_CLOCK 12345

typedef int (*clock_gettime_fn)(clockid_t, struct timespec *);
typedef int (*gettimeofday_fn)(struct timeval *, void *);
typedef time_t (*time_fn)(time_t *);
typedef int (*getcpu_fn)(unsigned *, unsigned *, void *);

static clock_gettime_fn vdso_clock_gettime;
static gettimeofday_fn vdso_gettimeofday;
static time_fn vdso_time;
static getcpu_fn vdso_getcpu;
static int rounds;

static void *vdso_symbol(void *vdso, const char *name) {
  void *p = dlsym(vdso, name);
  if (p == NULL) {
    fprintf(stderr, "no %s in the vDSO\n", name);
    exit(3);
  }
  return p;
}

static void *worker(void *arg) {
  (void)arg;
  struct timespec ts;
  struct timeval tv;
  unsigned cpu, node;
  int ok = 0, einval = 0, gtod = 0, tm = 0, gc = 0;
  for (int r = 0; r < rounds; r++) {
    ok += vdso_clock_gettime(CLOCK_MONOTONIC, &ts) == 0;
    ok += clock_gettime(CLOCK_REALTIME, &ts) == 0;
    /* The vDSO returns -EINVAL itself; libc turns it into -1 and errno. */
    einval += vdso_clock_gettime(BAD_CLOCK, &ts) == -EINVAL;
    einval += clock_gettime(BAD_CLOCK, &ts) == -1 && errno == EINVAL;
    if (r % 4 == 0) {
      gtod += vdso_gettimeofday(&tv, NULL) == 0;
      tm += vdso_time(NULL) > 0;
      gc += vdso_getcpu(&cpu, &node, NULL) == 0;
    }
  }
  printf("THREAD %d %d %d %d %d %d %d\n", (int)getpid(), (int)syscall(SYS_gettid), ok, einval,
         gtod, tm, gc);
  fflush(stdout);
  return NULL;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: vdso_population THREADS ROUNDS [WAVES]\n");
    return 2;
  }
  int threads = atoi(argv[1]);
  rounds = atoi(argv[2]);
  int waves = argc > 3 ? atoi(argv[3]) : 1;
  void *vdso = dlopen("linux-vdso.so.1", RTLD_LAZY | RTLD_NOLOAD);
  if (vdso == NULL) {
    fprintf(stderr, "no vDSO: %s\n", dlerror());
    return 3;
  }
  vdso_clock_gettime = (clock_gettime_fn)vdso_symbol(vdso, "__vdso_clock_gettime");
  vdso_gettimeofday = (gettimeofday_fn)vdso_symbol(vdso, "__vdso_gettimeofday");
  vdso_time = (time_fn)vdso_symbol(vdso, "__vdso_time");
  vdso_getcpu = (getcpu_fn)vdso_symbol(vdso, "__vdso_getcpu");
  struct timespec pause_ts = {0, 200 * 1000 * 1000};
  nanosleep(&pause_ts, NULL);
  pthread_t t[256];
  if (threads > 256) threads = 256;
  for (int w = 0; w < waves; w++) {
    for (int i = 0; i < threads; i++) pthread_create(&t[i], NULL, worker, NULL);
    for (int i = 0; i < threads; i++) pthread_join(t[i], NULL);
  }
  printf("DONE\n");
  fflush(stdout);
  return 0;
}
