/*
 * A minimal counting uprobe in C, for docs/benchmarks.md ("Probe monitors"): loads
 * bench/probe-count-minimal.bpf.o with libbpf, attaches it at OFFSET of FILE for process PID
 * with one uprobe_multi link made by the raw bpf(BPF_LINK_CREATE) (libbpf 1.1 has no API for
 * it), of attach type 48 (uprobe_multi) or 57 (uprobe session), prints "attached", and at the
 * end of stdin prints the hits counted and detaches.
 *   probe-count-minimal OBJECT TYPE PID FILE OFFSET
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "uprobe_link.h"

int main(int argc, char **argv) {
  if (argc != 6) {
    fprintf(stderr, "usage: %s OBJECT TYPE PID FILE OFFSET\n", argv[0]);
    return 2;
  }
  int type = atoi(argv[2]);
  struct bpf_object *o = bpf_object__open_file(argv[1], NULL);
  if (!o) {
    perror("open");
    return 1;
  }
  struct bpf_program *p = bpf_object__find_program_by_name(o, "count_probe");
  bpf_program__set_expected_attach_type(p, type);
  if (bpf_object__load(o)) {
    perror("load");
    return 1;
  }
  uint64_t offset = strtoull(argv[5], NULL, 0), cookie = 0;
  if (uprobe_link(bpf_program__fd(p), type, argv[4], &offset, &cookie, 1, atoi(argv[3]))) {
    return 1;
  }
  hold_until_eof();
  int cpus = libbpf_num_possible_cpus();
  uint64_t *values = calloc(cpus, 8), total = 0;
  uint32_t zero = 0;
  if (bpf_map_lookup_elem(bpf_object__find_map_fd_by_name(o, "hits"), &zero, values) == 0) {
    for (int i = 0; i < cpus; i++) total += values[i];
  }
  printf("hits %llu\n", (unsigned long long)total);
  return 0;
}
