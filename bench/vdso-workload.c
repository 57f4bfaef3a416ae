/*
 * The target of bench/run-vdso.sh: a single thread that calls clock_gettime(CLOCK_MONOTONIC)
 * through libc (which calls the vDSO) a fixed number of times and times itself.
 *
 * It starts, then blocks until a byte can be read from GO (a FIFO), so that a tracer can attach
 * with --pid and finish arming (and a JVM can finish starting) before anything is timed. No
 * signal is used for the go: a tracer would see it. Then it makes WARMUP untimed calls (they let
 * a JIT compile a tracer's hit path; every tracer gets them alike) and CALLS timed ones.
 *
 * The timing itself must not touch the traced function: it reads CLOCK_MONOTONIC through the
 * clock_gettime system call (syscall(2)), which never enters the vDSO.
 *
 * Writes to OUT (default stdout), one "key value" per line:
 *   calls N        every vDSO clock_gettime call made after the go (WARMUP + CALLS)
 *   timed_calls N  the timed ones
 *   elapsed_ns N   wall time of the timed calls
 *   check N        a value derived from the results, so the calls cannot be optimized away
 *   sigtraps N     SIGTRAPs received: on some VMs a hardware breakpoint's #DB occasionally
 *                  arrives with DR6 = 0 and the kernel raises SIGTRAP (TRAP_BRKPT) at the
 *                  breakpoint (docs/vdso.md); counted here so that a run is not lost to it
 *
 * usage: vdso-workload -g GO_FIFO [-n CALLS] [-w WARMUP] [-o OUT]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t sigtraps;

/* Returning re-runs the instruction, whose breakpoint then fires as it should. */
static void on_sigtrap(int sig) {
  (void)sig;
  sigtraps++;
}

/* CLOCK_MONOTONIC through the system call itself: invisible to a vDSO tracer. */
static uint64_t raw_now_ns(void) {
  struct timespec ts;
  if (syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts) != 0) {
    perror("vdso-workload: clock_gettime syscall");
    exit(1);
  }
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The traced call: libc's clock_gettime, which calls __vdso_clock_gettime from one site. */
static uint64_t calls_through_libc(long n) {
  uint64_t sum = 0;
  struct timespec ts;
  for (long i = 0; i < n; i++) {
    if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0) {
      perror("vdso-workload: clock_gettime");
      exit(1);
    }
    sum += (uint64_t)ts.tv_nsec;
  }
  return sum;
}

int main(int argc, char **argv) {
  long calls = 100000, warmup = 0;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_sigtrap;
  sigaction(SIGTRAP, &sa, NULL);
  const char *go = NULL, *out = NULL;
  int opt;
  while ((opt = getopt(argc, argv, "n:w:g:o:")) != -1) {
    switch (opt) {
      case 'n': calls = atol(optarg); break;
      case 'w': warmup = atol(optarg); break;
      case 'g': go = optarg; break;
      case 'o': out = optarg; break;
      default:
        fprintf(stderr, "usage: vdso-workload -g GO_FIFO [-n CALLS] [-w WARMUP] [-o OUT]\n");
        return 2;
    }
  }
  if (go == NULL || calls <= 0 || warmup < 0) {
    fprintf(stderr, "usage: vdso-workload -g GO_FIFO [-n CALLS] [-w WARMUP] [-o OUT]\n");
    return 2;
  }
  /* Blocks in open() until the script opens the FIFO for writing, then in read() for the byte. */
  int fd;
  do {
    fd = open(go, O_RDONLY);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) {
    perror("vdso-workload: open go fifo");
    return 1;
  }
  char byte;
  ssize_t r;
  do {
    r = read(fd, &byte, 1);
  } while (r < 0 && errno == EINTR);
  close(fd);
  if (r != 1) {
    fprintf(stderr, "vdso-workload: no go byte on %s\n", go);
    return 1;
  }

  uint64_t check = calls_through_libc(warmup);
  uint64_t start = raw_now_ns();
  check += calls_through_libc(calls);
  uint64_t elapsed = raw_now_ns() - start;

  FILE *f = out ? fopen(out, "w") : stdout;
  if (f == NULL) {
    perror("vdso-workload: open output");
    return 1;
  }
  fprintf(f, "calls %ld\ntimed_calls %ld\nelapsed_ns %llu\ncheck %llu\nsigtraps %d\n",
          warmup + calls, calls, (unsigned long long)elapsed, (unsigned long long)check,
          (int)sigtraps);
  return fclose(f) == 0 ? 0 : 1;
}
