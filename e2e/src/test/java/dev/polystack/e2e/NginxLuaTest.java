package dev.polystack.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * nginx with lua-nginx-module running OpenResty's luajit2 (a shared libluajit-5.1.so), two
 * workers under wrk load, each worker recorded by its own polystack (record attaches to one
 * process; both are recorded because the kernel spreads wrk's connections over them).
 *
 * <p>Debian's lua-nginx-module needs libluajit2-5.1-2, which conflicts with the upstream
 * libluajit-5.1-2 that the {@code luajit} executable (used by other tests) depends on, so
 * ./run-tests unpacks the lua module, lua-resty-core and luajit2 into {@link #PREFIX} instead of
 * installing them; nginx finds luajit2 there through LD_LIBRARY_PATH. When the packages are
 * installed system-wide instead, the test uses those.
 */
class NginxLuaTest {
  static final Path PREFIX = Path.of("/opt/polystack-ci/nginx-lua");
  /** Lines of handler.lua: where each function is defined, and its last line. */
  private static final int RENDER_FIRST = 5;
  private static final int RENDER_LAST = 11;
  private static final int COMPUTE_FIRST = 13;
  private static final int COMPUTE_LAST = 19;
  private static final int HANDLE_FIRST = 21;
  private static final int HANDLE_LAST = 28;

  @TempDir Path dir;

  @Test
  void workersUnderLoadShowLuaFramesSplicedIntoNginxStacks() throws Exception {
    int port = freePort();
    // A master started as root runs its workers as nobody: they must be able to read the script.
    Files.setPosixFilePermissions(dir, java.nio.file.attribute.PosixFilePermissions.fromString(
        "rwxr-xr-x"));
    Path handler = copyResource("handler.lua");
    Path conf = writeConfig(port);
    List<Process> started = new ArrayList<>();
    Process master = null;
    try {
      ProcessBuilder nginx = new ProcessBuilder("nginx", "-p", dir.toString(), "-c",
          conf.toString()).redirectErrorStream(true)
          .redirectOutput(dir.resolve("nginx.out").toFile());
      if (Files.isDirectory(PREFIX.resolve("usr/lib/x86_64-linux-gnu"))) {
        nginx.environment().put("LD_LIBRARY_PATH",
            PREFIX.resolve("usr/lib/x86_64-linux-gnu").toString());
      }
      master = nginx.start();
      started.add(master);
      awaitListening(port, master);
      List<Long> workers = master.children().map(ProcessHandle::pid).sorted().toList();
      assertEquals(2, workers.size(), "worker_processes 2: " + workers);

      HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
      var first = get(http, port);
      assertEquals(200, first.statusCode(), first.body() + log());
      assertTrue(first.body().startsWith("ok "), first.body());

      var inspect = Distribution.run("inspect", "--pid", Long.toString(workers.get(0)));
      assertEquals(0, inspect.exitCode(), inspect.stderr());
      String out = inspect.stdout();
      int lib = out.indexOf("/libluajit-5.1.so");
      assertTrue(lib >= 0, out);
      assertTrue(out.substring(lib).contains("luajit: supported: LuaJIT 2.1 (OpenResty, GC64"),
          out);
      assertTrue(out.substring(lib).contains("sizeof(lua_State) = 0x70"), out);

      // wrk loads the workers until both recordings are done, however long starting the
      // polystack JVMs takes on a busy host: then SIGINT ends it with its summary (its 300 s
      // duration only bounds a test that dies). Its 2 s default timeout is raised: a sampled
      // worker stops for a few ms per sample, and on a busy host a request can wait behind
      // several of them.
      Process wrk = new ProcessBuilder("wrk", "-t2", "-c8", "-d300s", "--timeout", "5s",
          "http://127.0.0.1:" + port + "/").redirectErrorStream(true).start();
      started.add(wrk);
      for (long worker : workers) { // the handler hot (and JIT-compiled) first
        Awaits.cpuTicks(worker, 30, 30_000);
      }
      // Each record runs until its worker has used 2.5 s of CPU while sampled (~250 samples at
      // 99 Hz), however little CPU a busy host gives the workers; then SIGINT ends it.
      List<Distribution.Running> records = new ArrayList<>();
      List<Path> outputs = new ArrayList<>();
      List<FoldedStacks> profiles = new ArrayList<>();
      try {
        for (long worker : workers) {
          Path folded = dir.resolve("worker-" + worker + ".folded");
          outputs.add(folded);
          records.add(Distribution.start("record", "--pid", Long.toString(worker),
              "--duration", "300s", "--format", "folded", "-o", folded.toString()));
        }
        for (int i = 0; i < workers.size(); i++) {
          Distribution.Running record = records.get(i);
          Awaits.until("record of worker " + workers.get(i) + " sampling", 120_000,
              () -> Reliability.holdsPerfEvents(record.pid()));
        }
        for (long worker : workers) {
          Awaits.cpuTicks(worker, 250, 120_000);
        }
        for (Distribution.Running record : records) {
          record.signal("INT");
        }
        for (int i = 0; i < workers.size(); i++) {
          Distribution.Result r = records.get(i).await(150);
          assertEquals(0, r.exitCode(), "worker " + workers.get(i) + ": " + r.stderr());
          assertTrue(r.stderr().contains("target still running"), r.stderr()); // never attached
          profiles.add(FoldedStacks.read(outputs.get(i)));
        }
      } finally {
        for (Distribution.Running record : records) {
          record.close();
        }
      }
      Process interrupt = new ProcessBuilder("kill", "-INT", Long.toString(wrk.pid())).start();
      assertEquals(0, interrupt.waitFor(), "kill -INT wrk");
      String wrkOut = new String(wrk.getInputStream().readAllBytes());
      assertTrue(wrk.waitFor(60, TimeUnit.SECONDS), "wrk did not finish");
      assertEquals(0, wrk.exitValue(), wrkOut);

      // The workers kept serving: wrk got answers, (almost) no socket errors, no non-2xx.
      Matcher requests = Pattern.compile("(\\d+) requests in").matcher(wrkOut);
      assertTrue(requests.find() && Long.parseLong(requests.group(1)) > 0, wrkOut);
      long socketErrors = 0;
      Matcher errors = Pattern.compile(
          "Socket errors: connect (\\d+), read (\\d+), write (\\d+), timeout (\\d+)").matcher(wrkOut);
      if (errors.find()) {
        for (int g = 1; g <= 4; g++) {
          socketErrors += Long.parseLong(errors.group(g));
        }
      }
      assertTrue(socketErrors <= 3, wrkOut);
      assertTrue(!wrkOut.contains("Non-2xx"), wrkOut);

      // ...and still do after polystack detached, with the same worker processes (a crashed
      // worker would have been replaced by the master under a new pid).
      var after = get(http, port);
      assertEquals(200, after.statusCode(), after.body() + log());
      assertTrue(after.body().startsWith("ok "), after.body());
      assertEquals(workers, master.children().map(ProcessHandle::pid).sorted().toList(),
          "workers were replaced" + log());

      FoldedStacks all = FoldedStacks.merge(profiles);
      long total = all.samples();
      // ~500 in a run; 150 keep render (6-11% of samples) from being missed by chance
      // (0.94^150 ~ 9e-5, within this class's budget; SamplingNoise).
      assertTrue(total >= 150, "too few samples: " + total + all.top(10));
      String chunk = handler.toString();
      Predicate<String> anyHandlerFrame = f -> {
        FoldedStacks.LuaFrame lua = FoldedStacks.LuaFrame.parse(f);
        return lua != null && lua.chunk().equals(chunk);
      };
      Predicate<String> handle = f -> LuaJitEmbedTest.isLua(f, "handle", chunk, HANDLE_FIRST + 1,
          HANDLE_LAST);
      Predicate<String> compute = f -> LuaJitEmbedTest.isLua(f, "compute", chunk,
          COMPUTE_FIRST + 1, COMPUTE_LAST);
      Predicate<String> render = f -> LuaJitEmbedTest.isLua(f, "render", chunk,
          RENDER_FIRST + 1, RENDER_LAST);
      long withLua = all.count(s -> s.has(anyHandlerFrame));
      long inCompute = all.count(s -> s.has(compute));
      long inRender = all.count(s -> s.has(render));
      System.out.printf("nginx: %d samples (%s per worker); handler.lua frames on %d (%.0f%%),"
              + " compute %d (%.0f%%), render %d (%.0f%%)%n", total,
          profiles.stream().map(p -> Long.toString(p.samples())).toList(), withLua,
          100.0 * withLua / total, inCompute, 100.0 * inCompute / total, inRender,
          100.0 * inRender / total);
      assertTrue(withLua * 2 >= total,
          "wrk keeps the workers in Lua: " + withLua + " of " + total + all.top(10));
      assertTrue(inCompute > 0, "no sample in compute" + all.top(10));
      assertTrue(inRender > 0, "no sample in render" + all.top(10));

      // Merged in call order, root to leaf: nginx's main, the lua module's native frames
      // (ngx_http_lua_*), the content_by_lua chunk, handle, then compute or render.
      // A frame whose PC the plug-in cannot place gets line 0 (counted as pc_outside_bytecode);
      // a rare one must not hide whether the merge order is right, so allow 2% of such stacks.
      List<String> misordered = new java.util.ArrayList<>();
      long checked = 0;
      for (FoldedStacks.Stack s : all.where(st -> st.has(anyHandlerFrame))) {
        checked++;
        int main = s.indexOf("main"::equals);
        int lua = s.indexOf(f -> f.startsWith("ngx_http_lua_"));
        int chunkFrame = s.indexOf(f -> f.startsWith("main chunk (content_by_lua("));
        int h = s.indexOf(handle);
        int firstLua = s.indexOf(f -> FoldedStacks.LuaFrame.parse(f) != null);
        int c = s.indexOf(compute);
        int r = s.indexOf(render);
        boolean ordered = 0 <= main && main < lua && lua < chunkFrame && chunkFrame < h
            && chunkFrame == firstLua
            && (s.frames().get(0).equals("_start") || s.frames().get(0).equals("main"))
            && (c < 0 || c > h) && (r < 0 || r > h);
        if (!ordered) {
          misordered.add(s.toString());
        }
      }
      assertTrue(checked > 0, "no stack with handler.lua frames" + all.top(10));
      long stacks = checked;
      assertTrue(misordered.size() <= SamplingNoise.binomialUpper(stacks, 0.02,
              SamplingNoise.alpha(4)),
          () -> misordered.size() + " of " + stacks + " stacks not merged as main, ngx_http_lua_*,"
              + " content_by_lua chunk, handle, then compute or render; first: "
              + misordered.get(0));
    } finally {
      for (int i = started.size() - 1; i >= 0; i--) {
        stop(started.get(i));
      }
      if (master != null) {
        master.descendants().forEach(ProcessHandle::destroyForcibly);
      }
    }
  }

  private Path writeConfig(int port) throws IOException {
    boolean unpacked = Files.isRegularFile(PREFIX.resolve(LUA_MODULE));
    Path luaModule = unpacked ? PREFIX.resolve(LUA_MODULE) : Path.of("/").resolve(LUA_MODULE);
    Path ndk = Path.of("/usr/lib/nginx/modules/ndk_http_module.so");
    assertTrue(Files.isRegularFile(luaModule) && Files.isRegularFile(ndk),
        "nginx lua module not found (" + luaModule + ", " + ndk + "): run ./run-tests as root");
    String share = unpacked ? PREFIX.resolve("usr/share/lua/5.1") + "/?.lua;" : "";
    String tmp = dir.resolve("tmp").toString();
    Files.createDirectories(dir.resolve("tmp"));
    String conf = """
        load_module %s;
        load_module %s;
        daemon off;
        master_process on;
        worker_processes 2;
        pid %s/nginx.pid;
        error_log %s/error.log info;
        events { worker_connections 256; }
        http {
          access_log off;
          client_body_temp_path %s; proxy_temp_path %s; fastcgi_temp_path %s;
          uwsgi_temp_path %s; scgi_temp_path %s;
          lua_package_path "%s/?.lua;%s;";
          server {
            listen 127.0.0.1:%d;
            location / {
              content_by_lua_block { require("handler").handle() }
            }
          }
        }
        """.formatted(ndk, luaModule, dir, dir, tmp, tmp, tmp, tmp, tmp, dir, share, port);
    return Files.writeString(dir.resolve("nginx.conf"), conf);
  }

  private static final String LUA_MODULE = "usr/lib/nginx/modules/ngx_http_lua_module.so";

  private void awaitListening(int port, Process master) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
    while (System.nanoTime() < deadline) {
      assertTrue(master.isAlive(), "nginx exited: " + log());
      try (Socket s = new Socket("127.0.0.1", port)) {
        if (master.children().count() == 2) {
          return;
        }
      } catch (IOException notYet) {
        // not listening yet
      }
      Thread.sleep(100);
    }
    throw new AssertionError("nginx did not start listening on " + port + log());
  }

  private static HttpResponse<String> get(HttpClient http, int port) throws Exception {
    return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/"))
        .timeout(Duration.ofSeconds(20)).build(), HttpResponse.BodyHandlers.ofString());
  }

  private String log() {
    try {
      Path log = dir.resolve("error.log");
      return Files.exists(log) ? "\nerror.log:\n" + Files.readString(log) : "";
    } catch (IOException e) {
      return "";
    }
  }

  /** SIGTERM first (nginx's master then stops its workers), then SIGKILL. */
  private static void stop(Process p) throws InterruptedException {
    if (!p.isAlive()) {
      return;
    }
    p.destroy();
    if (!p.waitFor(10, TimeUnit.SECONDS)) {
      p.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
    }
  }

  private static int freePort() throws IOException {
    try (ServerSocket s = new ServerSocket(0)) {
      return s.getLocalPort();
    }
  }

  private Path copyResource(String name) throws IOException {
    Path target = dir.resolve(name);
    try (InputStream in = NginxLuaTest.class.getResourceAsStream("/luajit-targets/" + name)) {
      if (in == null) {
        throw new IllegalStateException("missing test resource luajit-targets/" + name);
      }
      Files.copy(in, target);
    }
    return target;
  }
}
