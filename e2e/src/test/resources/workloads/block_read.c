/*
 * Blocks in read(2) on stdin until EOF, through a known chain: main -> wait_for_input -> read.
 * Prints "ready" first, then "done N" (N bytes read) at EOF and returns 0.
 */
#include <stdio.h>
#include <unistd.h>

__attribute__((noinline)) long wait_for_input(char *buf, unsigned long n) {
  long r = read(0, buf, n);
  __asm__ volatile("");
  return r;
}

int main(void) {
  char buf[64];
  long total = 0, r;
  printf("ready\n");
  fflush(stdout);
  while ((r = wait_for_input(buf, sizeof buf)) > 0) {
    total += r;
  }
  printf("done %ld\n", total);
  fflush(stdout);
  return r < 0 ? 3 : 0;
}
