package dev.polystack.otel.local;

import dev.polystack.otel.model.ModuleInfo;
import dev.polystack.otel.model.Recording;
import dev.polystack.otel.model.Sample;
import dev.polystack.otel.model.StackTrace;
import dev.polystack.otel.model.TargetInfo;
import dev.polystack.otel.model.ValueType;
import dev.polystack.plugin.api.Frame;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * A small LuaJIT service as the sampler would record it: two threads, native frames with and
 * without symbols, Lua frames, a kernel frame, a stack the walker gave up on, an empty stack.
 * The module paths do not exist, so pprof cannot replace our symbols with its own.
 */
public final class TestRecordings {
  public static final long START = 1_767_225_600_000_000_000L; // 2026-01-01T00:00:00Z
  public static final long PERIOD = 10_000_000L; // 100 Hz
  public static final int PID = 4242;
  public static final int MAIN_TID = 4242;
  public static final int WORKER_TID = 4250;

  public static final ModuleInfo APP = new ModuleInfo(0x400000L, 0x480000L, 0, "/opt/demo/bin/app-server",
      "0123456789abcdef0123456789abcdef01234567");
  public static final ModuleInfo LUAJIT = new ModuleInfo(0x7f10_0000_1000L, 0x7f10_0009_0000L, 0x1000,
      "/opt/demo/lib/libluajit-5.1.so.2", "");
  public static final ModuleInfo STRIPPED = new ModuleInfo(0x7f10_0020_0000L, 0x7f10_0030_0000L, 0x2000,
      "/opt/demo/lib/libcodec.so", "");

  public static final Frame MAIN = nativeFrame(0x401234L, "main", APP);
  public static final Frame LUA_PCALL = nativeFrame(0x7f10_0001_5678L, "lua_pcall", LUAJIT);
  public static final Frame BC_FUNCC = nativeFrame(0x7f10_0002_0abcL, "lj_BC_FUNCC", LUAJIT);
  /** No symbol: pprof and the labels must fall back to module + file offset. */
  public static final Frame CODEC = nativeFrame(0x7f10_0021_0040L, "", STRIPPED);
  public static final Frame READ = nativeFrame(0x7f10_0003_0000L, "read", LUAJIT);
  public static final Frame SYSCALL = new Frame(Frame.KERNEL, 0xffff_ffff_8100_0010L, "do_syscall_64",
      "", 0, 0, "", Map.of());
  public static final Frame HANDLE = luaFrame("handle_request", 42, 40);
  public static final Frame COMPUTE = luaFrame("compute", 17, 15);
  public static final Frame UNWIND_FAILED = Frame.error("unwind_failed");

  /** Leaf first, like the model. */
  public static final StackTrace LUA_STACK =
      new StackTrace(List.of(COMPUTE, HANDLE, BC_FUNCC, LUA_PCALL, MAIN));
  public static final StackTrace CODEC_STACK = new StackTrace(List.of(CODEC, LUA_PCALL, MAIN));
  public static final StackTrace SYSCALL_STACK =
      new StackTrace(List.of(SYSCALL, READ, UNWIND_FAILED));
  public static final StackTrace EMPTY = new StackTrace(List.of());

  public static final String LUA_LINE =
      "main;lua_pcall;lj_BC_FUNCC;handle_request (app.lua:42);compute (app.lua:17)";
  public static final String CODEC_LINE = "main;lua_pcall;libcodec.so+0x12040";
  public static final String SYSCALL_LINE = "[error: unwind_failed];read;do_syscall_64";

  private TestRecordings() {}

  /** Main thread: 5 Lua (interpreted) + 3 codec; worker: 4 Lua (JIT) + 2 syscall + 1 empty. */
  public static Recording service() {
    List<Sample> samples = new ArrayList<>();
    long t = START;
    for (int i = 0; i < 5; i++) {
      samples.add(new Sample(MAIN_TID, "app-server", t += PERIOD, LUA_STACK,
          Map.of("luajit.vmstate", "interp")));
      if (i < 4) {
        samples.add(new Sample(WORKER_TID, "worker-1", t, LUA_STACK,
            Map.of("luajit.vmstate", "jit", "luajit.trace", 7L)));
      }
    }
    for (int i = 0; i < 3; i++) {
      samples.add(new Sample(MAIN_TID, "app-server", t += PERIOD, CODEC_STACK, Map.of()));
    }
    samples.add(new Sample(WORKER_TID, "worker-1", t += PERIOD, SYSCALL_STACK, Map.of()));
    samples.add(new Sample(WORKER_TID, "worker-1", t += PERIOD, SYSCALL_STACK, Map.of()));
    samples.add(new Sample(WORKER_TID, "worker-1", t += PERIOD, EMPTY, Map.of()));
    return new Recording(
        new TargetInfo(PID, "/opt/demo/bin/app-server",
            List.of("/opt/demo/bin/app-server", "--config", "/etc/demo/app.conf")),
        START, t + PERIOD, PERIOD, "ptrace", List.of(STRIPPED, APP, LUAJIT), samples,
        Map.of("dropped.timeout", 2L));
  }

  /**
   * The service as a bpf-mode run reports it, as {@code polystack demo} does: the tick capture's
   * figures travel with the losses, beside a plug-in's note, a host note and {@code losses}.
   */
  public static Recording bpf(Map<String, Long> losses) {
    Recording r = service();
    Map<String, Long> counters = new java.util.HashMap<>(losses);
    counters.put("capture_records", 298L);
    counters.put("capture_ticks", 298L);
    counters.put("capture_plans", 2L);
    counters.put("plugin.luajit.g_from_cache", 40L);
    counters.put("module_not_elf", 1L);
    return new Recording(r.target(), r.startEpochNanos(), r.endEpochNanos(), r.periodNanos(),
        "bpf", r.modules(), r.samples(), counters);
  }

  static Frame nativeFrame(long address, String symbol, ModuleInfo module) {
    return new Frame(Frame.NATIVE, address, symbol, "", 0, 0, module.path(), Map.of());
  }

  /** The LuaJIT plug-in reports chunk names without the leading '@'. */
  static Frame luaFrame(String function, int line, int startLine) {
    return new Frame("luajit", 0, function, "app.lua", line, startLine, "", Map.of());
  }

  /**
   * One timed sample of {@code MAIN}, then {@code count} samples of it merged without their
   * times (a recording past its bound of timed samples), standing for {@code periods} periods.
   */
  /**
   * CPU samples of which some carry a plug-in's value {@code x.held} (count): {@code spin} 1,
   * 0, and 2 merged from 2 samples, so 3 in all; {@code wait} none.
   */
  public static Recording pluginValues() {
    ValueType held = new ValueType("x.held", "count");
    StackTrace spin = new StackTrace(List.of(new Frame("x", 0, "spin", "a.x", 3, 1, "",
        Map.of())));
    StackTrace wait = new StackTrace(List.of(new Frame("x", 0, "wait", "a.x", 9, 8, "",
        Map.of())));
    long[] none = new long[0];
    return new Recording(new TargetInfo(PID, APP.path(), List.of(APP.path())), START,
        START + 1_000_000_000L, 10_000_000L, "bpf", List.of(), List.of(
            new Sample(1, "main", START + 1, spin, Map.of(), 1, 1, none, Map.of(held, 1L)),
            new Sample(1, "main", START + 2, spin, Map.of(), 1, 1, none, Map.of(held, 0L)),
            new Sample(1, "main", START + 3, wait, Map.of(), 1, 1, none, Map.of()),
            new Sample(1, "main", START + 4, spin, Map.of(), 3, 2, none, Map.of(held, 2L))),
        Map.of());
  }

  public static Recording merging(int count, int periods) {
    StackTrace stack = new StackTrace(List.of(MAIN));
    return new Recording(new TargetInfo(PID, APP.path(), List.of(APP.path())), START,
        START + (1 + periods) * PERIOD, PERIOD, "ptrace", List.of(APP),
        List.of(new Sample(MAIN_TID, "app-server", START, stack, Map.of()),
            new Sample(MAIN_TID, "app-server", START + periods * PERIOD, stack, Map.of(),
                periods, count)),
        Map.of("sample_times_merged", (long) count));
  }

  /**
   * Two samples of one thread with one stack (main): the first stands for one period, the
   * second for {@code periods} (the ticks before it that were not taken).
   */
  public static Recording carrying(int periods) {
    StackTrace stack = new StackTrace(List.of(MAIN));
    return new Recording(new TargetInfo(PID, APP.path(), List.of(APP.path())), START,
        START + (1 + periods) * PERIOD, PERIOD, "ptrace", List.of(APP),
        List.of(new Sample(MAIN_TID, "app-server", START, stack, Map.of()),
            new Sample(MAIN_TID, "app-server", START + periods * PERIOD, stack, Map.of(),
                periods)),
        Map.of("late_tick", (long) periods - 1));
  }

  /**
   * An allocation recording: two stacks with the four values (alloc_objects, alloc_space,
   * inuse_objects, inuse_space), the second all freed; alloc_space by default.
   */
  public static Recording allocations() {
    TargetInfo target = new TargetInfo(7, APP.path(), List.of(APP.path()));
    StackTrace compute = new StackTrace(List.of(MAIN));
    StackTrace pcall = new StackTrace(List.of(LUA_PCALL, MAIN));
    return new Recording(target, 1_000_000_000L, 2_000_000_000L, 524288, "bpf-alloc",
        List.of(APP, LUAJIT),
        List.of(new Sample(7, "", 2_000_000_000L, compute, Map.of(), 1, 1,
                new long[] {30, 3000, 3, 300}),
            new Sample(7, "", 2_000_000_000L, pcall, Map.of(), 1, 1,
                new long[] {10, 1000, 0, 0})),
        Map.of(), ValueType.ALLOCATIONS, 1);
  }

  /** A record of --event calls: one value, calls, and one stack per 100 calls on average. */
  public static Recording calls() {
    TargetInfo target = new TargetInfo(7, APP.path(), List.of(APP.path()));
    return new Recording(target, 1_000_000_000L, 2_000_000_000L, 100, "bpf-calls",
        List.of(APP, LUAJIT),
        List.of(new Sample(7, "", 2_000_000_000L, new StackTrace(List.of(MAIN)), Map.of(), 1, 1,
                new long[] {3015}),
            new Sample(7, "", 2_000_000_000L, new StackTrace(List.of(LUA_PCALL, MAIN)), Map.of(),
                1, 1, new long[] {1005})),
        Map.of(), List.of(ValueType.CALLS), 0);
  }
}
