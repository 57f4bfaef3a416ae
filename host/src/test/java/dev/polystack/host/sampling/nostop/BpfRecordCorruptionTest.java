package dev.polystack.host.sampling.nostop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.polystack.host.bpf.BpfSupport;
import dev.polystack.host.bpf.CaptureRecord;
import dev.polystack.host.bpf.PlanEncoder;
import dev.polystack.host.bpf.TickCapture;
import dev.polystack.host.memory.ProcessMemory;
import dev.polystack.host.modules.ModuleOpener;
import dev.polystack.host.plugins.PluginGuard;
import dev.polystack.host.plugins.PluginLoader;
import dev.polystack.host.proc.ProcFs;
import dev.polystack.host.process.RuntimeBinding;
import dev.polystack.host.process.TargetProcess;
import dev.polystack.host.sampling.CapturedThread;
import dev.polystack.host.sampling.RawStack;
import dev.polystack.host.sampling.StackWalker;
import dev.polystack.host.testutil.TestTarget;
import dev.polystack.plugin.api.CapturePlan;
import dev.polystack.plugin.api.Registers;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The bpf path under hostile bytes: records captured at the tick from a real LuaJIT program,
 * with the LuaJIT plug-in's capture plan installed, then walked with bits flipped anywhere in
 * the record (registers, stack, the copied lua_State, global_State and Lua stack, the lengths
 * themselves). Each flipped record is refused whole by the parser or walked to an end: nothing
 * escapes, no plug-in call throws into its guard, and every LuaJIT error frame has a counter.
 */
class BpfRecordCorruptionTest {
  static final int CASES = Integer.getInteger("bpf.corrupt.cases", 20_000);

  @TempDir Path dir;

  @Test
  void flippedBitsInCapturedRecordsEndInErrorFramesNeverInExceptions() throws Exception {
    assertEquals(java.util.Optional.empty(), BpfSupport.unavailableReason());
    Path script = dir.resolve("busy.lua");
    Files.writeString(script, """
        local function leaf(n) local s = 0 for i = 1, n do s = s + i % 7 end return s end
        local function mid(n) return leaf(n) + #tostring(n) end
        local t = {}
        while true do
          for i = 1, 50 do t[i] = mid(200 + i) end
          table.sort(t, function(a, b) return a > b end)
        end
        """);
    Process luajit = new ProcessBuilder("luajit", "-joff", script.toString())
        .redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
    List<String> warnings = new ArrayList<>();
    PluginGuard guard = new PluginGuard(warnings::add);
    int pid = (int) luajit.pid();
    try (TickCapture capture = TickCapture.open(499, 4 << 20);
        TargetProcess target = new TargetProcess(pid, ProcFs.system(), new ModuleOpener(),
            ProcessMemory.of(pid), new PluginLoader().load(List.of()), guard, warnings::add)) {
      // Running its loop (5 ticks of CPU): past the dynamic loader, luajit's modules mapped.
      TestTarget.awaitMoreCpu(pid, 5, 30_000);
      target.refresh();
      StackWalker walker = new StackWalker(512, guard);
      capture.addTarget(pid, 16 << 10);
      List<byte[]> clean = collect(capture, target, walker, 100);
      RuntimeBinding luajitBinding = target.table().bindings().get(0);
      CapturePlan plan = luajitBinding.instance().capturePlan();
      assertTrue(!plan.isEmpty(), "the LuaJIT plug-in offers a plan once it walked");
      capture.setPlan(pid, 0, PlanEncoder.encode(plan));
      capture.poll(0, b -> { }); // records from before the plan
      clean = collect(capture, target, walker, 300);
      long withRegions = clean.stream()
          .filter(b -> CaptureRecord.parse(ByteBuffer.wrap(b)).regions().size() == 3).count();
      assertTrue(withRegions > clean.size() / 2, withRegions + " of " + clean.size()
          + " records carry the plan's three regions; counters " + capture.counters());

      SplittableRandom random = new SplittableRandom(Long.getLong("bpf.corrupt.seed", 16));
      long refused = 0;
      long errors = 0;
      for (int i = 0; i < CASES; i++) {
        byte[] b = clean.get(random.nextInt(clean.size())).clone();
        for (int flips = 1 + random.nextInt(4); flips > 0; flips--) {
          int bit = random.nextInt(b.length * 8);
          b[bit / 8] ^= (byte) (1 << (bit % 8));
        }
        CaptureRecord r;
        try {
          r = CaptureRecord.parse(ByteBuffer.wrap(b));
        } catch (IllegalArgumentException e) {
          refused++;
          continue;
        }
        RawStack stack;
        try {
          stack = walker.walk(new CapturedThread(pid, r.tid(), Registers.of(r.regs()),
              new TickMemory(r, target.hostMemory(),
                  TickMemory.stablePages(target.hostMemory(), new LastLivePages())), r.stackStart(),
              r.stack().length),
              target.table());
        } catch (RuntimeException e) {
          throw new AssertionError("case " + i + " escaped the walk: " + e, e);
        }
        assertEquals(List.of(), warnings, "a plug-in call threw in case " + i);
        if (stack.errors().stream().anyMatch(e -> e.startsWith("luajit"))) {
          errors++;
        }
      }
      var counters = target.getAndResetCounters();
      assertTrue(errors == 0 || !counters.isEmpty(), "LuaJIT error frames without counters");
      System.out.printf("bpf corruption: %d cases, %d refused by the parser, %d with a LuaJIT"
          + " error frame; counters %s%n", CASES, refused, errors, counters);
    } finally {
      luajit.destroyForcibly();
      luajit.waitFor(10, TimeUnit.SECONDS);
    }
  }

  /** {@code count} records of the target, each also walked clean (which teaches the plug-in G). */
  private static List<byte[]> collect(TickCapture capture, TargetProcess target,
      StackWalker walker, int count) {
    List<byte[]> out = new ArrayList<>();
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (out.size() < count && System.nanoTime() < deadline) {
      capture.poll(50, b -> {
        byte[] copy = new byte[b.remaining()];
        b.duplicate().get(copy);
        out.add(copy);
      });
    }
    assertTrue(out.size() >= count, "only " + out.size() + " records in 30 s");
    for (byte[] b : out) {
      CaptureRecord r = CaptureRecord.parse(ByteBuffer.wrap(b));
      walker.walk(new CapturedThread(target.pid(), r.tid(), Registers.of(r.regs()),
          new TickMemory(r, target.hostMemory(),
                  TickMemory.stablePages(target.hostMemory(), new LastLivePages())), r.stackStart(),
          r.stack().length),
          target.table());
    }
    return out;
  }
}
