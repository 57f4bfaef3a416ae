/* Test target for host tests. Modes (all print a "ready" line on stdout, flushed):
 *   loop STOPFILE       busy loop until STOPFILE exists, exit 7
 *   threads N STOPFILE  N busy threads until STOPFILE exists, exit 5
 *   calls N GOFILE      wait for GOFILE to exist, call work() N times, exit 0
 * A test ends a busy target when it is done with it (TestTarget.finish, or a kill on close),
 * never by a clock the test has to beat. A target left behind ends after 10 minutes.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

volatile unsigned long counter;
unsigned long pattern[4] = {0x1122334455667788UL, 0xdeadbeefcafebabeUL,
                            0x0123456789abcdefUL, 0xfedcba9876543210UL};
static long deadline_ms;
static const char *stop_file;

static long now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

__attribute__((noinline)) unsigned long work(unsigned long x) {
  counter++;
  __asm__ volatile("" ::: "memory");
  return x * 6364136223846793005UL + 1442695040888963407UL;
}

static unsigned long spin(void) {
  unsigned long acc = 1;
  while (now_ms() < deadline_ms && access(stop_file, F_OK) != 0) {
    for (int i = 0; i < 200000; i++) acc = work(acc);
  }
  return acc;
}

static void *thread_main(void *arg) {
  (void)arg;
  spin();
  return NULL;
}

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  /* Two pages, second PROT_NONE: a read crossing the boundary is partial for
   * process_vm_readv but allowed to PTRACE_PEEKDATA (FOLL_FORCE). */
  char *pages = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  for (int i = 0; i < 8192; i++) pages[i] = (char)(i & 0xff);
  mprotect(pages + 4096, 4096, PROT_NONE);
  /* One readable page between two PROT_NONE ones: a stack copy that starts below the stack
   * pointer must fall back to the pointer when the mapping begins in between. */
  char *guard = mmap(NULL, 12288, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  char *guarded = guard + 4096;
  for (int i = 0; i < 4096; i++) guarded[i] = (char)((i * 7) & 0xff);
  mprotect(guard, 4096, PROT_NONE);
  mprotect(guard + 8192, 4096, PROT_NONE);
  deadline_ms = now_ms() + 600000;
  if (strcmp(argv[1], "loop") == 0) {
    if (argc < 3) return 2;
    stop_file = argv[2];
    printf("ready pattern=%p counter=%p work=%p pages=%p guarded=%p\n", (void *)pattern,
           (void *)&counter, (void *)work, (void *)pages, (void *)guarded);
    fflush(stdout);
    unsigned long acc = spin();
    printf("done counter=%lu acc=%lu\n", counter, acc);
    return 7;
  }
  if (strcmp(argv[1], "threads") == 0) {
    if (argc < 4) return 2;
    int n = atoi(argv[2]);
    stop_file = argv[3];
    pthread_t t[16];
    for (int i = 0; i < n && i < 16; i++) pthread_create(&t[i], NULL, thread_main, NULL);
    printf("ready threads=%d\n", n);
    fflush(stdout);
    spin();
    for (int i = 0; i < n && i < 16; i++) pthread_join(t[i], NULL);
    printf("done\n");
    return 5;
  }
  if (strcmp(argv[1], "calls") == 0) {
    long n = atol(argv[2]);
    printf("ready work=%p\n", (void *)work);
    fflush(stdout);
    while (access(argv[3], F_OK) != 0) usleep(1000);
    unsigned long acc = 1;
    long calls = 0;
    for (long i = 0; i < n; i++) {
      acc = work(acc);
      calls++;
    }
    printf("calls=%ld acc=%lu\n", calls, acc);
    return 0;
  }
  return 2;
}
