/*
 * Two allocation paths of known byte ratio for record --event alloc: path_big allocates three
 * blocks for each one path_small allocates, over the same mixed sizes (16 B .. 62.5 KiB), so
 * path_big has exactly 3/4 of the bytes and of the calls. It prints "ready", waits for a line
 * on stdin (a profiler attaches meanwhile), runs ROUNDS rounds, prints "done" and exits 0.
 * The path_small blocks of the last KEEP rounds (second argument, default 0) are never freed:
 * they are in use at the end. With "nowait" as third argument it does not wait for the line.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static volatile long sink;

__attribute__((noinline)) void *path_big(size_t n) {
  void *p = malloc(n);
  sink += (long)p;
  return p;
}

__attribute__((noinline)) void *path_small(size_t n) {
  void *p = malloc(n);
  sink += (long)p;
  return p;
}

int main(int argc, char **argv) {
  static const size_t sizes[] = {16, 48, 200, 1000, 4096, 24, 64000, 512};
  long rounds = argc > 1 ? atol(argv[1]) : 100000;
  long keep = argc > 2 ? atol(argv[2]) : 0;
  char line[64];

  printf("ready\n");
  fflush(stdout);
  if ((argc < 4 || strcmp(argv[3], "nowait") != 0) && !fgets(line, sizeof line, stdin)) {
    return 3;
  }
  for (long i = 0; i < rounds; i++) {
    size_t n = sizes[i & 7];
    for (int k = 0; k < 3; k++) {
      free(path_big(n));
    }
    void *last = path_small(n);
    if (i < rounds - keep) {
      free(last);
    }
  }
  printf("done\n");
  fflush(stdout);
  return 0;
}
