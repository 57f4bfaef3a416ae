package dev.polystack.e2e;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * A LuaJIT build to profile: the executable, and the environment that makes its own jit.*
 * modules load (jit.p must read the vmdef.lua of the same build, or it names builtins wrongly).
 */
record LuaJitBuild(String name, Path executable, Map<String, String> env) {

  /** Debian's {@code luajit}: the upstream 2.1 snapshot, installed system-wide. */
  static LuaJitBuild upstream() {
    return new LuaJitBuild("upstream", Path.of("/usr/bin/luajit"), Map.of());
  }

  /**
   * OpenResty's luajit2. Its Debian packages conflict with {@code luajit}, so they are never
   * installed, only unpacked: first where ./run-tests unpacks them as root, else into
   * e2e/target once per checkout.
   */
  static synchronized LuaJitBuild openResty() throws IOException, InterruptedException {
    Path dir = Path.of("/var/cache/polystack-e2e/luajit2");
    if (!Files.isExecutable(dir.resolve("usr/bin/luajit"))) {
      dir = Distribution.root().resolve("e2e/target/luajit2");
      if (!Files.isExecutable(dir.resolve("usr/bin/luajit"))) {
        unpack(dir);
      }
    }
    Path unpacked = dir;
    Path jitModules;
    try (var found = Files.list(unpacked.resolve("usr/share"))) {
      jitModules = found.filter(p -> p.getFileName().toString().startsWith("luajit-"))
          .findFirst().orElseThrow(() -> new IOException("no jit modules under " + unpacked));
    }
    return new LuaJitBuild("openresty", dir.resolve("usr/bin/luajit"), Map.of(
        "LUA_PATH", jitModules + "/?.lua;;",
        // The Debian binary links LuaJIT statically today; if a later one links the shared
        // library, the unpacked one must win over any system copy.
        "LD_LIBRARY_PATH", dir.resolve("usr/lib/x86_64-linux-gnu").toString()));
  }

  private static void unpack(Path dir) throws IOException, InterruptedException {
    Path debs = Files.createTempDirectory("luajit2-debs");
    exec(debs, "apt-get", "download", "luajit2", "libluajit2-5.1-2", "libluajit2-5.1-common");
    Path staging = Files.createTempDirectory(dir.getParent() == null ? Path.of("/tmp")
        : Files.createDirectories(dir.getParent()), "luajit2-unpack");
    try (var found = Files.list(debs)) {
      for (Path deb : found.filter(p -> p.toString().endsWith(".deb")).toList()) {
        exec(debs, "dpkg", "-x", deb.toString(), staging.toString());
      }
    }
    // Rename last, so an interrupted unpack is never mistaken for a complete one.
    Files.move(staging, dir);
  }

  private static void exec(Path dir, String... command) throws IOException, InterruptedException {
    Path log = Files.createTempFile("luajit2-setup", ".log");
    Process p = new ProcessBuilder(command).directory(dir.toFile())
        .redirectErrorStream(true).redirectOutput(log.toFile()).start();
    if (!p.waitFor(120, TimeUnit.SECONDS)) {
      p.destroyForcibly();
      throw new IOException(String.join(" ", command) + " did not finish in 120 s");
    }
    if (p.exitValue() != 0) {
      throw new IOException(String.join(" ", command) + " failed (OpenResty's luajit2 is needed;"
          + " ./run-tests unpacks it into /var/cache/polystack-e2e/luajit2):\n" + Files.readString(log));
    }
  }

  List<String> command(String... args) {
    var out = new java.util.ArrayList<String>();
    out.add(executable.toString());
    out.addAll(List.of(args));
    return out;
  }

  @Override
  public String toString() {
    return name;
  }
}
