package dev.polystack.host.proc;


import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** A small C program with three named threads, optionally mapping a file PROT_EXEC. */
final class Probe implements AutoCloseable {
  static final String SOURCE =
      String.join(
          "\n",
          "#define _GNU_SOURCE",
          "#include <fcntl.h>",
          "#include <pthread.h>",
          "#include <stdio.h>",
          "#include <sys/mman.h>",
          "#include <unistd.h>",
          "static pthread_barrier_t barrier;",
          "static const char *names[] = {\"worker-1\", \"worker-2\", \"a) b\"};",
          "static void *run(void *arg) {",
          "  pthread_setname_np(pthread_self(), (const char *) arg);",
          "  pthread_barrier_wait(&barrier);",
          "  for (;;) pause();",
          "  return NULL;",
          "}",
          "int main(int argc, char **argv) {",
          "  if (argc > 1) {",
          "    int fd = open(argv[1], O_RDONLY);",
          "    if (fd < 0) { perror(\"open\"); return 2; }",
          "    void *p = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);",
          "    if (p == MAP_FAILED) { perror(\"mmap\"); return 3; }",
          "    close(fd);",
          "  }",
          "  pthread_barrier_init(&barrier, NULL, 4);",
          "  pthread_t t[3];",
          "  for (int i = 0; i < 3; i++) pthread_create(&t[i], NULL, run, (void *) names[i]);",
          "  pthread_barrier_wait(&barrier);",
          "  printf(\"ready\\n\");",
          "  fflush(stdout);",
          "  for (;;) pause();",
          "}",
          "");

  final Process process;

  private Probe(Process process) {
    this.process = process;
  }

  /** Compiles the probe into {@code dir}; skips the test if gcc is unavailable. */
  static Path compile(Path dir) throws IOException, InterruptedException {
    Path src = dir.resolve("probe.c");
    Files.writeString(src, SOURCE);
    Path bin = dir.resolve("probe");
    Process gcc;
    try {
      gcc =
          new ProcessBuilder("gcc", "-O1", "-pthread", "-o", bin.toString(), src.toString())
              .redirectErrorStream(true)
              .start();
    } catch (IOException e) {
      // ./run-tests installs gcc: a missing compiler is a broken setup, not a reason to skip.
      throw new IOException("gcc not available (install it: apt-get install gcc): "
          + e.getMessage(), e);
    }
    String out = new String(gcc.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    if (!gcc.waitFor(60, TimeUnit.SECONDS) || gcc.exitValue() != 0) {
      throw new IOException("gcc failed: " + out);
    }
    return bin;
  }

  /** Starts the probe and waits until all threads are named. */
  static Probe start(Path binary, String... args) throws IOException {
    List<String> command = new ArrayList<>();
    command.add(binary.toString());
    command.addAll(List.of(args));
    Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
    Probe probe = new Probe(p);
    try {
      BufferedReader reader =
          new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
      String line = reader.readLine();
      if (!"ready".equals(line)) {
        throw new IOException("probe did not start: " + line);
      }
      return probe;
    } catch (IOException | RuntimeException e) {
      probe.close();
      throw e;
    }
  }

  int pid() {
    return (int) process.pid();
  }

  @Override
  public void close() {
    process.destroyForcibly();
    try {
      process.waitFor(10, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
