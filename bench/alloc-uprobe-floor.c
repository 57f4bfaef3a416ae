/*
 * Attaches bench/alloc-uprobe-floor.bpf.o to libc offsets of process PID with one uprobe_multi
 * session link (raw bpf(BPF_LINK_CREATE): libbpf 1.1 has no API for it), prints "attached",
 * and holds it until stdin closes. The per-call floor of a uprobe trap with a BPF program.
 *   alloc-uprobe-floor OBJECT PID LIBC OFFSET...
 */
#include <bpf/libbpf.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "uprobe_link.h"

int main(int argc, char **argv) {
  if (argc < 5) {
    fprintf(stderr, "usage: %s OBJECT PID LIBC OFFSET...\n", argv[0]);
    return 2;
  }
  struct bpf_object *o = bpf_object__open_file(argv[1], NULL);
  if (!o) {
    perror("open");
    return 1;
  }
  struct bpf_program *p = bpf_object__find_program_by_name(o, "floor_probe");
  bpf_program__set_expected_attach_type(p, 57); /* BPF_TRACE_UPROBE_SESSION */
  if (bpf_object__load(o)) {
    perror("load");
    return 1;
  }
  int n = argc - 4;
  uint64_t *offsets = calloc(n, 8), *cookies = calloc(n, 8);
  for (int i = 0; i < n; i++) {
    offsets[i] = strtoull(argv[4 + i], NULL, 0);
  }
  if (uprobe_link(bpf_program__fd(p), 57, argv[3], offsets, cookies, n, atoi(argv[2]))) {
    return 1;
  }
  hold_until_eof();
  return 0;
}
