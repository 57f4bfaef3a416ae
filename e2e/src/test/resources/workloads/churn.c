/*
 * Targets whose processes and threads come and go while they are profiled.
 *
 *   churn threads SECONDS RATE   create and end RATE threads per second (each does a little work
 *                                and returns) beside one busy thread, for SECONDS; meanwhile,
 *                                one after another, threads named "tracked" that each use
 *                                TRACKED_MS ms of their own CPU time in tracked_work and end,
 *                                TRACKED_PAUSE_US apart.
 *                                Prints "threads N" (short-lived threads run to completion),
 *                                "tracked N" (tracked threads run to completion) and exits 0.
 *   churn exit MS                two busy threads; after MS ms a worker thread calls exit(5).
 *   churn exec MS                two busy threads; after MS ms the main thread execs this
 *                                program as "churn after-exec", which is busy for 1 s, prints
 *                                "after exec" and exits 6.
 *   churn fork MS                busy thread; for MS ms forks children (each busy ~5 ms, then
 *                                _exit(7)) and checks every one exited with 7; prints "forks N ok"
 *                                and exits 0 (or "fork FAILED" and 3).
 *   churn vfork MS               busy thread plus a thread that vforks a child which sleeps MS ms
 *                                before _exit(0): the vforking thread waits in uninterruptible
 *                                sleep (State D) meanwhile. Prints "vfork ready" when the child
 *                                sleeps, "vfork done" after it, then runs until stdin EOF,
 *                                prints "done" and exits 0.
 *   churn zombie                 forks a child that exits at once and is never reaped; prints
 *                                "zombie PID" and waits for stdin EOF, then reaps it, exits 0.
 *   churn stdin                  one busy thread until stdin EOF, prints "done", exits 0.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile int stop_now;
static volatile double sink;
static char *self;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static void spin_for(double seconds) {
  double end = now() + seconds;
  while (!stop_now && now() < end) {
    for (int i = 0; i < 20000; i++) sink += i * 0.5;
  }
}

static void *busy(void *arg) {
  (void)arg;
  spin_for(1e9);
  return NULL;
}

static void *short_lived(void *arg) {
  (void)arg;
  for (int i = 0; i < 2000; i++) sink += i;
  return NULL;
}

/* CPU time each tracked thread uses (ChurnTest derives its bound from it), and the pause between
 * two, so that the series takes about half a CPU. */
#define TRACKED_MS 300
#define TRACKED_PAUSE_US 200000

static double thread_cpu(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static void tracked_work(void) {
  double end = thread_cpu() + TRACKED_MS / 1000.0;
  while (thread_cpu() < end) {
    for (int i = 0; i < 20000; i++) sink += i * 0.5;
  }
  __asm__ volatile("");
}

static void *tracked(void *arg) {
  (void)arg;
  pthread_setname_np(pthread_self(), "tracked");
  tracked_work();
  return NULL;
}

static volatile double tracked_until;
static long tracked_done;

static void *tracked_series(void *arg) {
  (void)arg;
  while (now() < tracked_until) {
    pthread_t t;
    if (pthread_create(&t, NULL, tracked, NULL) == 0) {
      pthread_join(t, NULL);
      tracked_done++;
    }
    usleep(TRACKED_PAUSE_US);
  }
  return NULL;
}

static void start_busy(void) {
  pthread_t t;
  if (pthread_create(&t, NULL, busy, NULL) != 0) exit(100);
  pthread_detach(t);
}

static void wait_stdin(void) {
  char buf[64];
  while (read(0, buf, sizeof buf) > 0) {
  }
}

static void *exit_later(void *arg) {
  usleep((useconds_t)(long)arg * 1000);
  printf("exiting\n");
  fflush(stdout);
  exit(5);
}

static long vfork_ms;
static void *vforker(void *arg) {
  (void)arg;
  printf("vfork ready\n");
  fflush(stdout);
  pid_t child = vfork();
  if (child == 0) {
    struct timespec ts = {vfork_ms / 1000, (vfork_ms % 1000) * 1000000};
    syscall(SYS_nanosleep, &ts, NULL);
    syscall(SYS_exit, 0);
  }
  int status;
  waitpid(child, &status, 0);
  printf("vfork done\n");
  fflush(stdout);
  return NULL;
}

int main(int argc, char **argv) {
  self = argv[0];
  if (argc < 2) return 2;
  const char *mode = argv[1];
  long arg = argc > 2 ? atol(argv[2]) : 0;
  if (strcmp(mode, "threads") == 0) {
    long rate = argc > 3 ? atol(argv[3]) : 1000;
    start_busy();
    double end = now() + arg, next = now();
    long done = 0;
    tracked_until = end;
    pthread_t series;
    if (pthread_create(&series, NULL, tracked_series, NULL) != 0) return 3;
    while (now() < end) {
      pthread_t t;
      if (pthread_create(&t, NULL, short_lived, NULL) == 0) {
        pthread_join(t, NULL);
        done++;
      }
      next += 1.0 / rate;
      double wait = next - now();
      if (wait > 0) usleep((useconds_t)(wait * 1e6));
    }
    pthread_join(series, NULL);
    printf("threads %ld\ntracked %ld\n", done, tracked_done);
    return 0;
  }
  if (strcmp(mode, "exit") == 0) {
    start_busy();
    pthread_t t;
    pthread_create(&t, NULL, exit_later, (void *)arg);
    spin_for(1e9);
    return 1;
  }
  if (strcmp(mode, "exec") == 0) {
    start_busy();
    spin_for(arg / 1000.0);
    execl("/proc/self/exe", self, "after-exec", (char *)NULL);
    perror("exec");
    return 1;
  }
  if (strcmp(mode, "after-exec") == 0) {
    start_busy();
    spin_for(1.0);
    printf("after exec\n");
    fflush(stdout);
    return 6;
  }
  if (strcmp(mode, "fork") == 0) {
    start_busy();
    double end = now() + arg / 1000.0;
    long forks = 0, bad = 0;
    while (now() < end) {
      pid_t child = fork();
      if (child == 0) {
        spin_for(0.005);
        _exit(7);
      }
      int status;
      if (child < 0 || waitpid(child, &status, 0) != child || !WIFEXITED(status)
          || WEXITSTATUS(status) != 7) {
        bad++;
      }
      forks++;
    }
    printf(bad ? "fork FAILED %ld of %ld\n" : "forks %ld ok\n", bad ? bad : forks, forks);
    return bad ? 3 : 0;
  }
  if (strcmp(mode, "vfork") == 0) {
    vfork_ms = arg;
    start_busy();
    pthread_t t;
    pthread_create(&t, NULL, vforker, NULL);
    wait_stdin();
    pthread_join(t, NULL);
    printf("done\n");
    return 0;
  }
  if (strcmp(mode, "zombie") == 0) {
    pid_t child = fork();
    if (child == 0) _exit(0);
    printf("zombie %d\n", child);
    fflush(stdout);
    wait_stdin();
    waitpid(child, NULL, 0);
    printf("done\n");
    return 0;
  }
  if (strcmp(mode, "stdin") == 0) {
    start_busy();
    wait_stdin();
    printf("done\n");
    return 0;
  }
  return 2;
}
