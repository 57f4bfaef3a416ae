/*
 * vDSO test workload: 4 threads, each ITER rounds of four clock_gettime calls: through the vDSO
 * pointer (dlvsym) with CLOCK_MONOTONIC and with an invalid clock id, and through libc with
 * CLOCK_REALTIME and the invalid id. Each thread also raises SIGUSR1 at itself 5 times. Prints
 * what every call returned ("CALL tid kind clockid result sec nsec"), the handler count and DONE.
 * With RUN_MS > 0 the threads keep calling (1 ms apart) for that long, or with STOP_FILE until
 * that file exists (RUN_MS is then only a bound for a test that never creates it).
 * With VDSO_WORKLOAD_SIGTRAP=count in the environment it counts SIGTRAPs instead of dying of
 * one (a VM's spurious breakpoint traps, docs/vdso.md) and prints "SIGTRAP n".
 * Usage: vdso_workload ITER [RUN_MS] [START_DELAY_MS] [STOP_FILE]
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <errno.h>

#define THREADS 4
#define BAD_CLOCK 12345

typedef int (*cg_fn)(clockid_t, struct timespec *);
static cg_fn vdso_cg;
static int iter, run_ms, delay_ms;
static const char *stop_file;
static atomic_int usr1;
static pthread_mutex_t out = PTHREAD_MUTEX_INITIALIZER;

static atomic_int traps;

static void on_usr1(int sig) { (void)sig; atomic_fetch_add(&usr1, 1); }
static void on_trap(int sig) { (void)sig; atomic_fetch_add(&traps, 1); }

/* One call site for every direct call, so the tracer needs one return slot for them. */
__attribute__((noinline)) static int direct(clockid_t id, struct timespec *ts) {
  int r = vdso_cg(id, ts);
  __asm__ volatile("" ::: "memory");
  return r;
}

static long now_ms(void) {
  struct timespec t;
  syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1000L + t.tv_nsec / 1000000;
}

static int calling_on(long end) {
  if (run_ms <= 0 || now_ms() >= end) return 0;
  return stop_file == NULL || access(stop_file, F_OK) != 0;
}

static void *worker(void *arg) {
  (void)arg;
  int tid = (int)syscall(SYS_gettid);
  if (delay_ms > 0) usleep(delay_ms * 1000);
  size_t cap = 1 << 20, len = 0; /* every line of a 1.5 s run (~6,000 calls) */
  char *buf = malloc(cap);
  long end = now_ms() + run_ms;
  for (int i = 0; i < iter || calling_on(end); i++) {
    for (int k = 0; k < 4; k++) {
      struct timespec ts = {0, 0};
      clockid_t id = (k == 0) ? CLOCK_MONOTONIC : (k == 2) ? CLOCK_REALTIME : BAD_CLOCK;
      int r = k < 2 ? direct(id, &ts) : clock_gettime(id, &ts);
      if (k >= 2 && r != 0) r = -errno;
      if (len + 128 < cap)
        len += snprintf(buf + len, cap - len, "CALL %d %s %d %d %ld %ld\n", tid,
                        k < 2 ? "direct" : "libc", (int)id, r, (long)ts.tv_sec, (long)ts.tv_nsec);
    }
    if (i < 5) pthread_kill(pthread_self(), SIGUSR1);
    if (run_ms > 0) usleep(1000);
  }
  pthread_mutex_lock(&out);
  fwrite(buf, 1, len, stdout);
  pthread_mutex_unlock(&out);
  free(buf);
  return NULL;
}

int main(int argc, char **argv) {
  iter = argc > 1 ? atoi(argv[1]) : 20;
  run_ms = argc > 2 ? atoi(argv[2]) : 0;
  delay_ms = argc > 3 ? atoi(argv[3]) : 0;
  stop_file = argc > 4 ? argv[4] : NULL;
  void *h = dlopen("linux-vdso.so.1", RTLD_NOW | RTLD_NOLOAD);
  vdso_cg = h ? (cg_fn)dlvsym(h, "__vdso_clock_gettime", "LINUX_2.6") : NULL;
  if (!vdso_cg) { fprintf(stderr, "no vDSO clock_gettime\n"); return 2; }
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_usr1;
  sigaction(SIGUSR1, &sa, NULL);
  const char *count_traps = getenv("VDSO_WORKLOAD_SIGTRAP");
  if (count_traps != NULL && strcmp(count_traps, "count") == 0) {
    sa.sa_handler = on_trap;
    sigaction(SIGTRAP, &sa, NULL);
  }
  pthread_t t[THREADS];
  for (int i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, worker, NULL);
  for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
  if (count_traps != NULL) printf("SIGTRAP %d\n", atomic_load(&traps));
  printf("USR1 %d\nDONE\n", atomic_load(&usr1));
  fflush(stdout);
  return 0;
}
