// Loads one program of a BPF object with libbpf and prints what the kernel's verifier reported
// for it (its statistics line, log level 4) and how long the load took: the part of a bpf-mode
// start that grows with the program's branches. Used by bench/run-bpf-load.sh.
#include <bpf/libbpf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

// BPF_TRACE_UPROBE_SESSION: libbpf 1.1's headers predate it (docs/allocations.md).
#define UPROBE_SESSION 57

static char log_buf[1 << 20];

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: verify OBJECT PROGRAM\n");
    return 2;
  }
  libbpf_set_print(NULL);
  struct bpf_object *obj = bpf_object__open_file(argv[1], NULL);
  if (!obj) {
    fprintf(stderr, "verify: cannot open %s\n", argv[1]);
    return 1;
  }
  int found = 0;
  struct bpf_program *prog;
  bpf_object__for_each_program(prog, obj) {
    int wanted = strcmp(bpf_program__name(prog), argv[2]) == 0;
    bpf_program__set_autoload(prog, wanted);
    if (wanted) {
      found = 1;
      if (strcmp(argv[2], "alloc_probe") == 0)
        bpf_program__set_expected_attach_type(prog, (enum bpf_attach_type)UPROBE_SESSION);
      bpf_program__set_log_level(prog, 4);
      bpf_program__set_log_buf(prog, log_buf, sizeof log_buf);
    }
  }
  if (!found) {
    fprintf(stderr, "verify: no program %s in %s\n", argv[2], argv[1]);
    return 1;
  }
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  int err = bpf_object__load(obj);
  clock_gettime(CLOCK_MONOTONIC, &b);
  if (err) {
    fprintf(stderr, "verify: %s refused (%d)\n", argv[2], err);
    return 1;
  }
  const char *stats = strstr(log_buf, "processed ");
  int insns = -1, states = -1;
  if (stats)
    sscanf(stats, "processed %d insns (limit %*d) max_states_per_insn %*d total_states %d",
           &insns, &states);
  printf("%s\t%d\t%d\t%.3f\n", argv[2], insns, states,
         (b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9);
  bpf_object__close(obj);
  return 0;
}
