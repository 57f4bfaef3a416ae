/*
 * A target for fault-injection tests: several threads doing known work whose results it checks
 * itself, so that anything a profiler does to it (a thread left stopped, a signal lost or
 * delivered twice, a register or memory word changed) shows in its exit and its last line.
 *
 *   3 threads "calc-N":  calc_outer -> calc_mid -> calc_leaf, a deterministic hash over a private
 *                        buffer, repeated in rounds; every round must equal the first.
 *   thread "signaller":  sends SIGUSR1 to a calc thread, waits until its handler has run, and
 *                        again (so that no two are ever pending at once and none may merge);
 *                        sent must equal received at the end.
 *   thread "sleeper":    nanosleep(1 ms) in a loop (a syscall that is interrupted and restarted
 *                        by ptrace stops).
 *   main:                reads stdin until EOF, then stops the threads and prints
 *                        "survivor ok checksum=HEX rounds=N signals=S/S" and exits 0, or
 *                        "survivor FAILED ..." and exits 3.
 *
 * Prints "ready" once all threads run. The checksum is the same on every run (it depends only on
 * the work, not on timing): tests compare it with an unprofiled run.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CALC_THREADS 3
#define WORDS 4096

static volatile int stop_now;
static volatile sig_atomic_t received;
static long sent;
static long lost_waits;
static pthread_t calc_tid[CALC_THREADS];
static uint64_t first_result[CALC_THREADS];
static long rounds[CALC_THREADS];
static long mismatches[CALC_THREADS];
static long sleeps;

static void on_usr1(int sig) {
  (void)sig;
  received++;
}

__attribute__((noinline)) static uint64_t calc_leaf(uint64_t *buf, uint64_t seed) {
  uint64_t h = seed ^ 0x9e3779b97f4a7c15ULL;
  for (int pass = 0; pass < 8; pass++) {
    for (int i = 0; i < WORDS; i++) {
      buf[i] = buf[i] * 6364136223846793005ULL + (h ^ (uint64_t)i);
      h = (h ^ buf[i]) * 0xff51afd7ed558ccdULL;
      h ^= h >> 29;
    }
  }
  __asm__ volatile("");
  return h;
}

__attribute__((noinline)) static uint64_t calc_mid(uint64_t *buf, uint64_t seed) {
  for (int i = 0; i < WORDS; i++) buf[i] = seed + (uint64_t)i * 31;
  uint64_t h = calc_leaf(buf, seed);
  __asm__ volatile("");
  return h;
}

__attribute__((noinline)) static uint64_t calc_outer(uint64_t seed) {
  uint64_t buf[WORDS];
  uint64_t h = calc_mid(buf, seed);
  __asm__ volatile("");
  return h;
}

static void *calc(void *arg) {
  int n = (int)(intptr_t)arg;
  char name[16];
  snprintf(name, sizeof name, "calc-%d", n);
  pthread_setname_np(pthread_self(), name);
  first_result[n] = calc_outer((uint64_t)n + 1);
  rounds[n] = 1;
  while (!stop_now) {
    if (calc_outer((uint64_t)n + 1) != first_result[n]) mismatches[n]++;
    rounds[n]++;
  }
  return NULL;
}

static void *signaller(void *arg) {
  (void)arg;
  pthread_setname_np(pthread_self(), "signaller");
  int k = 0;
  while (!stop_now) {
    sig_atomic_t before = received;
    if (pthread_kill(calc_tid[k++ % CALC_THREADS], SIGUSR1) != 0) break;
    sent++;
    /* Wait (up to 10 s) for the handler, so that two signals are never pending together. */
    struct timespec ts = {0, 200000};
    int waited = 0;
    while (received == before && waited < 50000) {
      nanosleep(&ts, NULL);
      waited++;
    }
    if (received == before) lost_waits++;
    nanosleep(&ts, NULL);
  }
  return NULL;
}

static void *sleeper(void *arg) {
  (void)arg;
  pthread_setname_np(pthread_self(), "sleeper");
  struct timespec ts = {0, 1000000};
  while (!stop_now) {
    struct timespec rem;
    while (nanosleep(&ts, &rem) != 0 && errno == EINTR) ts = rem;
    ts.tv_sec = 0;
    ts.tv_nsec = 1000000;
    sleeps++;
  }
  return NULL;
}

int main(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_usr1;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGUSR1, &sa, NULL);

  for (int i = 0; i < CALC_THREADS; i++) {
    if (pthread_create(&calc_tid[i], NULL, calc, (void *)(intptr_t)i) != 0) return 100;
  }
  pthread_t s, z;
  if (pthread_create(&s, NULL, signaller, NULL) != 0) return 100;
  if (pthread_create(&z, NULL, sleeper, NULL) != 0) return 100;
  printf("ready\n");
  fflush(stdout);

  char buf[64];
  while (read(0, buf, sizeof buf) > 0) {
  }
  stop_now = 1;
  pthread_join(s, NULL);
  pthread_join(z, NULL);
  uint64_t checksum = 0;
  long total_rounds = 0, bad = 0;
  for (int i = 0; i < CALC_THREADS; i++) {
    pthread_join(calc_tid[i], NULL);
    checksum = checksum * 1000003ULL ^ first_result[i];
    total_rounds += rounds[i];
    bad += mismatches[i];
  }
  /* A signal sent just before stop may still be on its way: give it a moment. */
  for (int i = 0; i < 1000 && received != sent; i++) usleep(1000);
  if (bad != 0 || received != sent || lost_waits != 0) {
    printf("survivor FAILED checksum=%016llx rounds=%ld mismatches=%ld signals=%ld/%ld"
           " lost_waits=%ld\n", (unsigned long long)checksum, total_rounds, bad,
           (long)received, sent, lost_waits);
    fflush(stdout);
    return 3;
  }
  printf("survivor ok checksum=%016llx rounds=%ld signals=%ld/%ld sleeps=%ld\n",
         (unsigned long long)checksum, total_rounds, (long)received, sent, sleeps);
  fflush(stdout);
  return 0;
}
