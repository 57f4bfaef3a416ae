/*
 * Allocates through every probed libc entry point (malloc, calloc, realloc, posix_memalign,
 * aligned_alloc, free) until its stdin reaches end of file or a line, checking each block's
 * contents before freeing it, then prints "done N" (rounds run) and exits 0. It prints "ready"
 * first. A wrong byte, a failed allocation or a crash is harm done to it: exit 1 or a signal.
 */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int check(unsigned char *p, size_t n, unsigned char v) {
  for (size_t i = 0; i < n; i += 61) {
    if (p[i] != v) {
      return 0;
    }
  }
  return 1;
}

int main(void) {
  static const size_t sizes[] = {16, 200, 4096, 24, 64000, 512, 96, 1000};
  long rounds = 0;
  printf("ready\n");
  fflush(stdout);
  for (;;) {
    if ((rounds & 1023) == 0) {
      struct pollfd in = {.fd = 0, .events = POLLIN};
      if (poll(&in, 1, 0) != 0) {
        break;
      }
    }
    size_t n = sizes[rounds & 7];
    unsigned char v = (unsigned char)rounds;
    unsigned char *a = malloc(n);
    unsigned char *b = calloc(1, n);
    void *c = NULL;
    if (!a || !b || posix_memalign(&c, 64, n) != 0) {
      fprintf(stderr, "allocation failed in round %ld\n", rounds);
      return 1;
    }
    unsigned char *d = aligned_alloc(64, (n + 63) & ~(size_t)63);
    if (!d || b[n - 1] != 0) {
      fprintf(stderr, "aligned_alloc or calloc wrong in round %ld\n", rounds);
      return 1;
    }
    memset(a, v, n);
    a = realloc(a, n * 2);
    if (!a || !check(a, n, v)) {
      fprintf(stderr, "realloc lost the block's contents in round %ld\n", rounds);
      return 1;
    }
    memset(c, v, n);
    if (!check(c, n, v)) {
      fprintf(stderr, "block changed under the program in round %ld\n", rounds);
      return 1;
    }
    free(a);
    free(b);
    free(c);
    free(d);
    rounds++;
  }
  printf("done %ld\n", rounds);
  fflush(stdout);
  return 0;
}
