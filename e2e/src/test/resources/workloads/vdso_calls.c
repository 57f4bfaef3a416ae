/*
 * vDSO workload with a population the tests know exactly. Every call is clock_gettime through
 * libc (so through the vDSO): OK calls use CLOCK_MONOTONIC, failing ones an invalid clock id
 * (EINVAL). Every process prints what it did, one line each, flushed at once:
 *   "CALLS pid tid ok failed"   after a thread's calls
 *   "CHILD pid"                 a fork/vfork child's pid, printed by the parent
 *   "EXEC"                      just before a worker thread execs
 *   "TICK tid n"                in loop mode, every 100 calls of a thread
 *   "READY"                     in loop mode, once the threads run
 *
 * Usage:
 *   vdso_calls threads T N      T threads, each N OK calls and N/4 failing ones, then exit 0
 *   vdso_calls exec N           a worker thread makes N calls, then execs "threads 1 N" while
 *                               the main thread sleeps
 *   vdso_calls fork N           N calls, fork; the child makes N calls and N/4 failing ones;
 *                               the parent waits for it, then exits with the child's status
 *   vdso_calls vfork N          N calls, vfork; the child makes N calls and _exits
 *   vdso_calls loop T           T threads, each a call every ms until stdin reaches EOF
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define BAD_CLOCK 12345

static int n_calls;

static int tid(void) { return (int)syscall(SYS_gettid); }

static atomic_int eof;

static void *reader(void *arg) {
  (void)arg;
  char buf[256];
  while (read(0, buf, sizeof buf) > 0) {
  }
  atomic_store(&eof, 1);
  return NULL;
}

/* ok OK calls and bad failing ones from the calling thread; reports them. */
static void calls(int ok, int bad) {
  struct timespec ts;
  int okn = 0, badn = 0;
  for (int i = 0; i < ok; i++) okn += clock_gettime(CLOCK_MONOTONIC, &ts) == 0;
  for (int i = 0; i < bad; i++) badn += clock_gettime(BAD_CLOCK, &ts) != 0;
  printf("CALLS %d %d %d %d\n", (int)getpid(), tid(), okn, badn);
  fflush(stdout);
}

/* A call every ms until stdin reaches EOF. */
static void *looper(void *arg) {
  (void)arg;
  struct timespec ts, pause_ts = {0, 1000000};
  long n = 0;
  while (!atomic_load(&eof)) {
    clock_gettime(CLOCK_MONOTONIC, &ts);
    if (++n % 100 == 0) {
      printf("TICK %d %ld\n", tid(), n);
      fflush(stdout);
    }
    nanosleep(&pause_ts, NULL);
  }
  printf("CALLS %d %d %ld 0\n", (int)getpid(), tid(), n);
  fflush(stdout);
  return NULL;
}

static void *worker(void *arg) {
  (void)arg;
  calls(n_calls, n_calls / 4);
  return NULL;
}

static char *self;

static void *execer(void *arg) {
  (void)arg;
  calls(n_calls, 0);
  char n[16];
  snprintf(n, sizeof n, "%d", n_calls);
  printf("EXEC\n");
  fflush(stdout);
  execl(self, self, "threads", "1", n, (char *)NULL);
  perror("execl");
  _exit(4);
}

int main(int argc, char **argv) {
  if (argc < 2) { fprintf(stderr, "usage: vdso_calls MODE ...\n"); return 2; }
  self = argv[0];
  const char *mode = argv[1];
  if (!strcmp(mode, "threads") && argc == 4) {
    int t = atoi(argv[2]);
    n_calls = atoi(argv[3]);
    pthread_t th[64];
    if (t < 1 || t > 64) return 2;
    for (int i = 0; i < t; i++) pthread_create(&th[i], NULL, worker, NULL);
    for (int i = 0; i < t; i++) pthread_join(th[i], NULL);
    return 0;
  }
  if (!strcmp(mode, "exec") && argc == 3) {
    n_calls = atoi(argv[2]);
    pthread_t th;
    pthread_create(&th, NULL, execer, NULL);
    for (;;) pause(); /* the exec from the worker ends this thread */
  }
  if ((!strcmp(mode, "fork") || !strcmp(mode, "vfork")) && argc == 3) {
    n_calls = atoi(argv[2]);
    calls(n_calls, 0);
    pid_t child = !strcmp(mode, "fork") ? fork() : vfork();
    if (child == 0) {
      if (mode[0] == 'f') {
        calls(n_calls, n_calls / 4);
        _exit(0);
      }
      /* vfork: the parent waits on us, sharing our memory; no stdio here (its buffers are the
         parent's), a raw write instead. */
      struct timespec ts;
      int okn = 0;
      for (int i = 0; i < n_calls; i++) okn += clock_gettime(CLOCK_MONOTONIC, &ts) == 0;
      char line[64];
      int len = snprintf(line, sizeof line, "CALLS %d %d %d 0\n", (int)getpid(), tid(), okn);
      if (write(1, line, len) != len) _exit(5);
      _exit(0);
    }
    if (child < 0) { perror("fork"); return 3; }
    printf("CHILD %d\n", (int)child);
    fflush(stdout);
    int st;
    waitpid(child, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 6;
  }
  if (!strcmp(mode, "loop") && argc == 3) {
    int t = atoi(argv[2]);
    pthread_t th[64], rd;
    if (t < 1 || t > 64) return 2;
    pthread_create(&rd, NULL, reader, NULL);
    for (int i = 0; i < t; i++) pthread_create(&th[i], NULL, looper, NULL);
    printf("READY\n");
    fflush(stdout);
    for (int i = 0; i < t; i++) pthread_join(th[i], NULL);
    return 0;
  }
  fprintf(stderr, "usage: vdso_calls threads T N | exec N | fork N | vfork N | loop T\n");
  return 2;
}
