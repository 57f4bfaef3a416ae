/*
 * vDSO calls from signal handlers that interrupt vDSO calls: the main thread calls
 * clock_gettime and getcpu through vDSO pointers ROUNDS times; a second thread sends it SIGUSR1
 * every few hundred microseconds until it is done, and the handler calls gettimeofday and time
 * (vDSO pointers too). Under a tracer that stops the thread at each breakpoint, a signal sent
 * while the thread is stopped at a call's entry is delivered right there, so the handler's calls
 * nest inside the interrupted one.
 *
 * Prints
 *   "HANDLER pid tid clock_gettime getcpu gettimeofday time signals nested"
 * (nested: signals that arrived while the main loop was around or inside one of its calls)
 * and "DONE".
 *
 * usage: vdso_handler ROUNDS
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

typedef int (*clock_gettime_fn)(clockid_t, struct timespec *);
typedef int (*gettimeofday_fn)(struct timeval *, void *);
typedef time_t (*time_fn)(time_t *);
typedef int (*getcpu_fn)(unsigned *, unsigned *, void *);

static clock_gettime_fn vdso_clock_gettime;
static gettimeofday_fn vdso_gettimeofday;
static time_fn vdso_time;
static getcpu_fn vdso_getcpu;
static volatile sig_atomic_t gtod_calls, time_calls, signals, nested;
static volatile sig_atomic_t in_call; /* set around each of the main loop's vDSO calls */
static volatile int done;
static pthread_t main_thread;

static void on_usr1(int sig) {
  (void)sig;
  struct timeval tv;
  if (vdso_gettimeofday(&tv, NULL) == 0) gtod_calls++;
  if (vdso_time(NULL) > 0) time_calls++;
  signals++;
  nested += in_call;
}

static void *sender(void *arg) {
  (void)arg;
  struct timespec pause = {0, 300 * 1000};
  while (!__atomic_load_n(&done, __ATOMIC_ACQUIRE)) {
    pthread_kill(main_thread, SIGUSR1);
    nanosleep(&pause, NULL);
  }
  return NULL;
}

static void *symbol(void *vdso, const char *name) {
  void *p = dlsym(vdso, name);
  if (!p) {
    fprintf(stderr, "no %s in the vDSO\n", name);
    exit(2);
  }
  return p;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: vdso_handler ROUNDS\n");
    return 2;
  }
  int rounds = atoi(argv[1]);
  void *vdso = dlopen("linux-vdso.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (!vdso) {
    fprintf(stderr, "no vDSO\n");
    return 2;
  }
  vdso_clock_gettime = (clock_gettime_fn)symbol(vdso, "__vdso_clock_gettime");
  vdso_gettimeofday = (gettimeofday_fn)symbol(vdso, "__vdso_gettimeofday");
  vdso_time = (time_fn)symbol(vdso, "__vdso_time");
  vdso_getcpu = (getcpu_fn)symbol(vdso, "__vdso_getcpu");
  struct sigaction sa = {0};
  sa.sa_handler = on_usr1;
  sa.sa_flags = SA_RESTART;
  sigaction(SIGUSR1, &sa, NULL);
  main_thread = pthread_self();
  pthread_t t;
  pthread_create(&t, NULL, sender, NULL);
  int cg = 0, gc = 0;
  struct timespec ts;
  unsigned cpu, node;
  for (int i = 0; i < rounds; i++) {
    in_call = 1;
    int a = vdso_clock_gettime(CLOCK_MONOTONIC, &ts) == 0;
    int b = vdso_getcpu(&cpu, &node, NULL) == 0;
    in_call = 0;
    cg += a;
    gc += b;
  }
  /* No signal may land between the last count and the report. */
  sigset_t block;
  sigemptyset(&block);
  sigaddset(&block, SIGUSR1);
  pthread_sigmask(SIG_BLOCK, &block, NULL);
  __atomic_store_n(&done, 1, __ATOMIC_RELEASE);
  pthread_join(t, NULL);
  printf("HANDLER %d %ld %d %d %d %d %d %d\n", getpid(), (long)syscall(SYS_gettid), cg, gc,
         (int)gtod_calls, (int)time_calls, (int)signals, (int)nested);
  printf("DONE\n");
  return 0;
}
