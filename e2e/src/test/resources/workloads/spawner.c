/*
 * A parent that starts a busy child only when told, for --subprocesses: the child exists only
 * after polystack has started. Built like every workload (-O2 -fomit-frame-pointer).
 *
 * Usage: spawner SECONDS [PROGRAM ARGS...]. Waits (in read(2), off CPU) for a line on stdin,
 * forks, prints "child PID", and the child either spins for SECONDS in
 *   main -> spawn -> child_top -> child_leaf
 * or, given PROGRAM, execs it with ARGS. The parent waits for the child, prints "done" and
 * exits 0.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile double sink;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void child_leaf(double until) {
  while (now() < until) {
    for (int i = 0; i < 200000; i++) sink += i * 0.5;
  }
}
__attribute__((noinline)) void child_top(double until) { child_leaf(until); __asm__ volatile(""); }

__attribute__((noinline)) static pid_t spawn(double seconds, char **program) {
  pid_t pid = fork();
  if (pid == 0) {
    if (program[0] != NULL) {
      execv(program[0], program);
      perror("execv");
      _exit(127);
    }
    child_top(now() + seconds);
    _exit(0);
  }
  __asm__ volatile("");
  return pid;
}

int main(int argc, char **argv) {
  char line[64];
  if (argc < 2) {
    fprintf(stderr, "usage: spawner SECONDS [PROGRAM ARGS...]\n");
    return 2;
  }
  if (fgets(line, sizeof line, stdin) == NULL) {
    return 1;
  }
  pid_t pid = spawn(atof(argv[1]), argv + 2);
  if (pid < 0) {
    perror("fork");
    return 1;
  }
  printf("child %d\n", (int)pid);
  fflush(stdout);
  int status;
  waitpid(pid, &status, 0);
  printf("done\n");
  fflush(stdout);
  return 0;
}
