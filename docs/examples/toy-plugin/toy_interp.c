/*
 * A "toy interpreter": the runtime the example plug-in (example.toy.ToyPlugin) knows. Like a
 * real VM it keeps its own call stack in memory the native unwinder cannot interpret: the global
 * toy_state names the script functions being run, innermost last. toy_interp_run is the
 * interpreter loop; native frames it calls (toy_native_sleep, a builtin written in C) sit above
 * it, native frames that called it (main) below.
 *
 * Build: gcc -O2 -rdynamic -fno-optimize-sibling-calls -o toy_interp toy_interp.c
 * Run:   ./toy_interp        (the script calls a native builtin that sleeps, forever)
 *        ./toy_interp spin   (the script spins inside the interpreter loop, forever)
 */
#include <string.h>
#include <time.h>

struct toy_frame {
  const char *name; /* NUL-terminated function name */
  int line;         /* line executing in that function */
  int pad;
};

struct toy_state {
  char magic[8]; /* "TOYVM01": lets a reader check it found the right thing */
  int depth;     /* valid entries in frames, at most 16 */
  int pad;
  struct toy_frame frames[16]; /* frames[0] is the outermost script function */
};

struct toy_state toy_state = {"TOYVM01", 0, 0, {{0, 0, 0}}};

static volatile unsigned long sink;

__attribute__((noinline)) void toy_native_sleep(void) {
  struct timespec ts = {0, 50 * 1000 * 1000};
  nanosleep(&ts, 0);
}

static void toy_push(const char *name, int line) {
  int d = toy_state.depth;
  toy_state.frames[d].name = name;
  toy_state.frames[d].line = line;
  /* Publish the frame only once it is complete: a sample may stop us at any instruction. */
  __atomic_store_n(&toy_state.depth, d + 1, __ATOMIC_RELEASE);
}

__attribute__((noinline)) void toy_interp_run(int spin) {
  toy_push("main", 3);
  toy_push("load_config", 12);
  toy_push("render_page", 27);
  for (;;) {
    if (spin) {
      for (unsigned long k = 0; k < 1000000; k++) {
        sink += k;
      }
    } else {
      toy_native_sleep();
    }
  }
}

int main(int argc, char **argv) {
  toy_interp_run(argc > 1 && strcmp(argv[1], "spin") == 0);
  return 0;
}
