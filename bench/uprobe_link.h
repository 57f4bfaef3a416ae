/*
 * What the bench's minimal uprobe programs share: a uprobe_multi link made with the raw
 * bpf(BPF_LINK_CREATE) (libbpf 1.1 has no API for it; layout of union bpf_attr.link_create on
 * Linux 6.x), and holding it until stdin closes.
 */
#ifndef BENCH_UPROBE_LINK_H
#define BENCH_UPROBE_LINK_H
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Links prog_fd at n offsets of path in process pid; attach_type 48 (multi) or 57 (session). */
static int uprobe_link(int prog_fd, uint32_t attach_type, const char *path,
                       const uint64_t *offsets, const uint64_t *cookies, uint32_t n, int pid) {
  unsigned char attr[64];
  memset(attr, 0, sizeof attr);
  *(uint32_t *)(attr + 0) = prog_fd;
  *(uint32_t *)(attr + 8) = attach_type;
  *(uint64_t *)(attr + 16) = (uint64_t)(uintptr_t)path;
  *(uint64_t *)(attr + 24) = (uint64_t)(uintptr_t)offsets;
  *(uint64_t *)(attr + 40) = (uint64_t)(uintptr_t)cookies;
  *(uint32_t *)(attr + 48) = n;
  *(uint32_t *)(attr + 56) = pid;
  if (syscall(SYS_bpf, 28 /* BPF_LINK_CREATE */, attr, sizeof attr) < 0) {
    perror("BPF_LINK_CREATE");
    return -1;
  }
  return 0;
}

/* Says "attached" and waits for the end of stdin, the caller's signal to let go. */
static void hold_until_eof(void) {
  printf("attached\n");
  fflush(stdout);
  char buf[64];
  while (read(0, buf, sizeof buf) > 0) {
  }
}
#endif
