/*
 * The floor for `polystack vdso --backend bpf`: the same mechanism in minimal C with libbpf, so
 * bench/run-vdso.sh can put polystack's per-call cost next to it in one run. Loads
 * vdso-bpf-floor.bpf.o (built by the script with clang), opens a PERF_TYPE_BREAKPOINT (X, len 8,
 * sample_period 1, inherit, exclude_kernel) at the function's entry and at each of its ret
 * instructions in every thread of PID, attaches the handler to each (PERF_EVENT_IOC_SET_BPF),
 * and drains the ring buffer (ring_buffer__poll, 10 ms) counting records until the target exits
 * or SIGINT/SIGTERM. Addresses are offsets in the vDSO image, given by the script (objdump of
 * this kernel's vDSO): resolution is setup, not per-call cost.
 *
 * Prints on stdout (or -o FILE) "key value" lines: calls, lost (ring full), return_missed
 * (unpaired returns), pending_full, outputs_unreadable.
 *
 * usage: vdso-bpf-floor -p PID -B OBJECT -e ENTRY_OFFSET -r RET_OFFSET[,RET_OFFSET...] [-o FILE]
 */
#define _GNU_SOURCE
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <dirent.h>
#include <errno.h>
#include <linux/hw_breakpoint.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

static volatile sig_atomic_t stop;
static unsigned long long calls;

static void on_signal(int s) { (void)s; stop = 1; }

static int on_record(void *ctx, void *data, size_t size) {
  (void)ctx; (void)data; (void)size;
  calls++;
  return 0;
}

static unsigned long vdso_base(int pid) {
  char path[64], line[512];
  snprintf(path, sizeof path, "/proc/%d/maps", pid);
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  unsigned long base = 0;
  while (fgets(line, sizeof line, f))
    if (strstr(line, "[vdso]")) { base = strtoul(line, NULL, 16); break; }
  fclose(f);
  return base;
}

static int open_bp(int tid, unsigned long addr) {
  struct perf_event_attr a;
  memset(&a, 0, sizeof a);
  a.size = sizeof a;
  a.type = PERF_TYPE_BREAKPOINT;
  a.bp_type = HW_BREAKPOINT_X;
  a.bp_addr = addr;
  a.bp_len = 8;
  a.sample_period = 1;
  a.inherit = 1;
  a.exclude_kernel = 1;
  a.exclude_hv = 1;
  a.disabled = 1;
  return (int)syscall(SYS_perf_event_open, &a, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
}

int main(int argc, char **argv) {
  int pid = 0, opt;
  const char *object = NULL, *out = NULL;
  char *rets = NULL;
  unsigned long entry_off = 0;
  while ((opt = getopt(argc, argv, "p:B:e:r:o:")) != -1) {
    switch (opt) {
      case 'p': pid = atoi(optarg); break;
      case 'B': object = optarg; break;
      case 'e': entry_off = strtoul(optarg, NULL, 0); break;
      case 'r': rets = optarg; break;
      case 'o': out = optarg; break;
      default: goto usage;
    }
  }
  if (pid <= 0 || !object || !entry_off || !rets) goto usage;
  unsigned long base = vdso_base(pid);
  if (!base) { fprintf(stderr, "no vDSO in process %d\n", pid); return 1; }
  unsigned long addrs[8];
  int naddr = 0;
  addrs[naddr++] = base + entry_off;
  for (char *t = strtok(rets, ","); t && naddr < 8; t = strtok(NULL, ","))
    addrs[naddr++] = base + strtoul(t, NULL, 0);

  struct bpf_object *obj = bpf_object__open_file(object, NULL);
  if (!obj) { perror("bpf_object__open_file"); return 1; }
  struct bpf_map *rodata = bpf_object__find_map_by_name(obj, ".rodata");
  size_t sz;
  unsigned long *ip = rodata ? (unsigned long *)(uintptr_t)bpf_map__initial_value(rodata, &sz) : NULL;
  if (!ip) { fprintf(stderr, "no .rodata\n"); return 1; }
  *ip = addrs[0];
  if (bpf_object__load(obj)) { perror("bpf_object__load"); return 1; }
  int prog = bpf_program__fd(bpf_object__find_program_by_name(obj, "floor_probe"));
  struct ring_buffer *ring = ring_buffer__new(bpf_object__find_map_fd_by_name(obj, "ring"),
                                              on_record, NULL, NULL);
  if (!ring) { perror("ring_buffer__new"); return 1; }

  int fds[4096], nfd = 0;
  char task[64];
  snprintf(task, sizeof task, "/proc/%d/task", pid);
  DIR *d = opendir(task);
  struct dirent *de;
  while (d && (de = readdir(d)) != NULL) {
    int tid = atoi(de->d_name);
    if (tid <= 0) continue;
    for (int i = 0; i < naddr && nfd < 4096; i++) {
      int fd = open_bp(tid, addrs[i]);
      if (fd < 0) { if (errno == ESRCH) break; perror("perf_event_open"); return 1; }
      if (ioctl(fd, PERF_EVENT_IOC_SET_BPF, prog)) { perror("SET_BPF"); return 1; }
      fds[nfd++] = fd;
    }
  }
  if (d) closedir(d);
  for (int i = 0; i < nfd; i++) ioctl(fds[i], PERF_EVENT_IOC_ENABLE, 0);

  signal(SIGINT, on_signal);
  signal(SIGTERM, on_signal);
  while (!stop && kill(pid, 0) == 0) ring_buffer__poll(ring, 10);
  for (int i = 0; i < nfd; i++) close(fds[i]);
  ring_buffer__consume(ring);

  unsigned long long lost[4] = {0};
  int lfd = bpf_object__find_map_fd_by_name(obj, "lost");
  for (unsigned k = 0; k < 4; k++) bpf_map_lookup_elem(lfd, &k, &lost[k]);
  FILE *o = out ? fopen(out, "w") : stdout;
  if (!o) { perror(out); return 1; }
  fprintf(o, "calls %llu\nlost %llu\nreturn_missed %llu\npending_full %llu\n"
          "outputs_unreadable %llu\n", calls, lost[0], lost[1], lost[2], lost[3]);
  if (o != stdout) fclose(o);
  return 0;
usage:
  fprintf(stderr, "usage: vdso-bpf-floor -p PID -B OBJECT -e ENTRY_OFFSET -r RET[,RET...]"
          " [-o FILE]\n");
  return 2;
}
