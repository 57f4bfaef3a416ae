/*
 * A target whose names attack the terminal of whoever profiles it: the main thread names itself
 * "\e[31mred\e[0m" (an SGR colour change) and a second thread "x\n\xc2\x9b2Jy" (a newline to
 * forge a line of output, then the UTF-8 form of the C1 CSI with "2J": clear screen). Both
 * through prctl(PR_SET_NAME), which any process may do to itself.
 *
 * Prints "ready" once both names are set, then blocks in read(2) on stdin until EOF (the second
 * thread sleeps meanwhile) and exits 0.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <unistd.h>

static volatile int named;
static volatile int stop_now;

static void *second(void *arg) {
  (void)arg;
  prctl(PR_SET_NAME, "x\n\xc2\x9b" "2Jy", 0, 0, 0);
  named = 1;
  while (!stop_now) {
    usleep(10000);
  }
  return NULL;
}

int main(void) {
  prctl(PR_SET_NAME, "\x1b[31mred\x1b[0m", 0, 0, 0);
  pthread_t t;
  if (pthread_create(&t, NULL, second, NULL) != 0) {
    return 100;
  }
  while (!named) {
    usleep(1000);
  }
  printf("ready\n");
  fflush(stdout);
  char buf[64];
  while (read(0, buf, sizeof buf) > 0) {
  }
  stop_now = 1;
  pthread_join(t, NULL);
  return 0;
}
