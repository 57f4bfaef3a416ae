/*
 * reuse_pid PID UID PROGRAM [ARG...]
 * Starts PROGRAM as user UID (in its own process group) with exactly the pid PID, the way a
 * wrapped-around pid counter would hand it out, by setting /proc/sys/kernel/ns_last_pid (root
 * only). Prints "pid=PID" once PROGRAM is about to run, then waits for it and exits with its
 * status. Exit 3 when the pid could not be taken (in use, or taken by someone else every time).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: reuse_pid PID UID PROGRAM [ARG...]\n");
    return 2;
  }
  pid_t want = (pid_t) atoi(argv[1]);
  uid_t uid = (uid_t) atoi(argv[2]);
  int fd = open("/proc/sys/kernel/ns_last_pid", O_RDWR | O_CLOEXEC);
  if (fd < 0 || flock(fd, LOCK_EX) != 0) {
    perror("ns_last_pid");
    return 3;
  }
  char last[32];
  int len = snprintf(last, sizeof last, "%d", want - 1);
  for (int attempt = 0; attempt < 2000; attempt++) {
    int go[2];
    if (pipe2(go, O_CLOEXEC) != 0) {
      perror("pipe");
      return 3;
    }
    if (pwrite(fd, last, len, 0) != len) {
      perror("write ns_last_pid");
      return 3;
    }
    pid_t child = fork();
    if (child < 0) {
      perror("fork");
      return 3;
    }
    if (child == 0) {
      char c = 0;
      close(go[1]);
      if (read(go[0], &c, 1) != 1 || c != 'g') {
        _exit(0);
      }
      setpgid(0, 0);
      if (setgroups(0, NULL) != 0 || setgid(uid) != 0 || setuid(uid) != 0) {
        perror("setuid");
        _exit(127);
      }
      execvp(argv[3], argv + 3);
      perror("exec");
      _exit(127);
    }
    close(go[0]);
    int status;
    if (child != want) {
      if (write(go[1], "n", 1) != 1) {
        perror("write");
      }
      close(go[1]);
      waitpid(child, &status, 0);
      continue;
    }
    flock(fd, LOCK_UN);
    printf("pid=%d\n", child);
    fflush(stdout);
    if (write(go[1], "g", 1) != 1) {
      perror("write");
    }
    close(go[1]);
    while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  fprintf(stderr, "reuse_pid: pid %d not obtained\n", want);
  return 3;
}
