/*
 * One busy thread whose time is split about 9 to 1 between two functions, for top's tests:
 *
 *   main -> hot   (9 units of work a round)
 *   main -> cold  (1 unit a round)
 *
 * Built by the tests with -O2 -fomit-frame-pointer. Usage: hot_cold stdin. Runs until stdin
 * reaches EOF (watched by a second thread that sleeps in read(2)), then prints "done".
 */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

static volatile double sink;
static volatile int stop_now;

/* noinline plus an empty asm after each loop: each function keeps a frame of its own. */
__attribute__((noinline)) void hot(void) {
  for (int i = 0; i < 900000; i++) sink += i * 0.5;
  __asm__ volatile("");
}

__attribute__((noinline)) void cold(void) {
  for (int i = 0; i < 100000; i++) sink += i * 0.25;
  __asm__ volatile("");
}

static void *watch_stdin(void *arg) {
  char buf[64];
  (void)arg;
  while (read(0, buf, sizeof buf) > 0) {
  }
  stop_now = 1;
  return NULL;
}

int main(void) {
  pthread_t w;
  if (pthread_create(&w, NULL, watch_stdin, NULL) != 0) {
    perror("pthread_create");
    return 100;
  }
  pthread_detach(w);
  while (!stop_now) {
    hot();
    cold();
  }
  printf("done\n");
  fflush(stdout);
  return 0;
}
