/* Target of the probe tests (ProbeCommandTest, ProbeKillTest, ProbeSpansOtlpTest): functions with
 * known call counts and durations. Modes:
 *   count N        ready; on "go": 4 threads call probe_counted N times each; "done"; exits at EOF
 *   once N         as count, without waiting: for a launched command
 *   sleep N US     ready; on "go": N calls of probe_sleeper(US), each timed here; prints
 *                  "done" and, per log2 bucket of its own timings, "bI=COUNT"; exits at EOF
 *   spans N US     no waiting (a launched command): N times probe_counted(i) then
 *                  probe_sleeper(US), on one thread; "done"
 *   loop           4 threads call probe_counted until stdin ends; "done TOTAL"; exit 0
 *   dlclose LIB    ready; on "go": 1000 calls of LIB's lib_probed, dlclose, "closed"; then
 *                  calls probe_counted until stdin ends; "done"; exit 0
 *   clocks M R     ready; on "go": clock_gettime(CLOCK_MONOTONIC) M times, CLOCK_REALTIME R
 *                  times and once with the undefined clock id 12345; "done RESULT" (the last
 *                  call's result, -1); exits at EOF (ProbeCommandTest, decoded arguments)
 *   hw N           starts 4 threads, which wait; "ready", then "jit 0xADDR" (a copy of
 *                  probe_counted's job in an anonymous executable mapping) and "data 0xADDR" (a
 *                  variable); on "go" each thread calls probe_counted(i), the jit code(i) and
 *                  clock_gettime N times each; "done"; exits at EOF (ProbeHardwareTest) */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>

__attribute__((noinline, used)) long probe_counted(long x) {
  __asm__ volatile("" : "+r"(x));
  return x + 1;
}

/* Ends in a tail call (a jmp to probe_counted at -O2): its returns cannot be watched by ret
 * breakpoints (ProbeHardwareTest). */
__attribute__((noinline, used)) long probe_tail(long x) {
  return probe_counted(x * 3);
}

__attribute__((noinline, used)) void probe_sleeper(long us) {
  struct timespec t = {us / 1000000, (us % 1000000) * 1000};
  while (nanosleep(&t, &t) != 0) {
  }
}

static long calls;
static atomic_long total;
static atomic_int stop;

static void *counter(void *arg) {
  long s = 0;
  for (long i = 0; i < calls; i++) s += probe_counted(i);
  return (void *)s;
}

static void *looper(void *arg) {
  long n = 0;
  while (!atomic_load(&stop)) {
    probe_counted(n++);
    if (n % 256 == 0) usleep(100);
  }
  atomic_fetch_add(&total, n);
  return 0;
}

static void await_line(const char *want) {
  char line[64];
  if (!fgets(line, sizeof line, stdin) || strncmp(line, want, strlen(want)) != 0) exit(3);
}

static void await_eof(void) {
  char line[64];
  while (fgets(line, sizeof line, stdin)) {
  }
}

static void say(const char *s) {
  printf("%s\n", s);
  fflush(stdout);
}

static void run_threads(void *(*fn)(void *)) {
  pthread_t t[4];
  for (int i = 0; i < 4; i++) pthread_create(&t[i], 0, fn, 0);
  if (fn == looper) {
    await_eof();
    atomic_store(&stop, 1);
  }
  for (int i = 0; i < 4; i++) pthread_join(t[i], 0);
}

static long (*jit)(long);
static pthread_barrier_t start_line;

static void *hw_worker(void *arg) {
  struct timespec t;
  long s = 0;
  pthread_barrier_wait(&start_line);
  for (long i = 0; i < calls; i++) {
    s += probe_counted(i);
    s += jit(i);
    clock_gettime(CLOCK_MONOTONIC, &t);
  }
  return (void *)s;
}

/* lea rax, [rdi + 1]; ret: code no file holds, as a JIT compiler's. */
static long (*make_jit(void))(long) {
  static const unsigned char code[] = {0x48, 0x8d, 0x47, 0x01, 0xc3};
  void *p = mmap(0, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) exit(1);
  memcpy(p, code, sizeof code);
  if (mprotect(p, 4096, PROT_READ | PROT_EXEC) != 0) exit(1);
  return (long (*)(long))p;
}

static long nanos(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1000000000L + t.tv_nsec;
}

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  const char *mode = argv[1];
  if (!strcmp(mode, "count") || !strcmp(mode, "once")) {
    calls = atol(argv[2]);
    if (!strcmp(mode, "count")) {
      say("ready");
      await_line("go");
    }
    run_threads(counter);
    say("done");
    if (!strcmp(mode, "count")) await_eof();
    return 0;
  }
  if (!strcmp(mode, "sleep")) {
    long n = atol(argv[2]), us = atol(argv[3]);
    long buckets[64] = {0};
    say("ready");
    await_line("go");
    for (long i = 0; i < n; i++) {
      long t0 = nanos();
      probe_sleeper(us);
      long d = nanos() - t0;
      buckets[63 - __builtin_clzl(d)]++;
    }
    printf("done");
    for (int b = 0; b < 64; b++)
      if (buckets[b]) printf(" b%d=%ld", b, buckets[b]);
    say("");
    await_eof();
    return 0;
  }
  if (!strcmp(mode, "spans")) {
    long n = atol(argv[2]), us = atol(argv[3]), s = 0;
    for (long i = 0; i < n; i++) {
      s += probe_counted(i);
      probe_sleeper(us);
    }
    say("done");
    return s > 0 ? 0 : 5;
  }
  if (!strcmp(mode, "hw")) {
    pthread_t t[4];
    calls = atol(argv[2]);
    jit = make_jit();
    pthread_barrier_init(&start_line, 0, 5);
    for (int i = 0; i < 4; i++) pthread_create(&t[i], 0, hw_worker, 0);
    say("ready");
    printf("jit %p\ndata %p\n", (void *)jit, (void *)&calls);
    fflush(stdout);
    await_line("go");
    pthread_barrier_wait(&start_line);
    for (int i = 0; i < 4; i++) pthread_join(t[i], 0);
    say("done");
    await_eof();
    return 0;
  }
  if (!strcmp(mode, "clocks")) {
    long mono = atol(argv[2]), real = atol(argv[3]);
    struct timespec t;
    say("ready");
    await_line("go");
    for (long i = 0; i < mono; i++) clock_gettime(CLOCK_MONOTONIC, &t);
    for (long i = 0; i < real; i++) clock_gettime(CLOCK_REALTIME, &t);
    int bad = clock_gettime((clockid_t)12345, &t);
    printf("done %d\n", bad);
    fflush(stdout);
    await_eof();
    return 0;
  }
  if (!strcmp(mode, "loop")) {
    say("ready");
    run_threads(looper);
    printf("done %ld\n", atomic_load(&total));
    return 0;
  }
  if (!strcmp(mode, "dlclose")) {
    void *h = dlopen(argv[2], RTLD_NOW);
    if (!h) {
      fprintf(stderr, "%s\n", dlerror());
      return 1;
    }
    long (*fn)(long) = (long (*)(long))dlsym(h, "lib_probed");
    if (!fn) return 1;
    say("ready");
    await_line("go");
    long s = 0;
    for (long i = 0; i < 1000; i++) s += fn(i);
    if (dlclose(h) != 0) return 4;
    say("closed");
    calls = 1000;
    run_threads(counter);
    await_eof();
    say("done");
    return s > 0 ? 0 : 5;
  }
  return 2;
}
