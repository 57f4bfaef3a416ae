package dev.polystack.host.session;

import dev.polystack.host.plugins.PluginGuard;
import dev.polystack.host.plugins.PluginRegistry;
import dev.polystack.host.proc.ProcReadException;
import dev.polystack.host.proc.ProcessMaps;
import dev.polystack.host.process.TargetProcess;
import dev.polystack.host.sampling.CapturedThread;
import dev.polystack.host.sampling.RawStack;
import dev.polystack.host.sampling.StackWalker;
import dev.polystack.host.snapshot.MemoryImage;
import dev.polystack.host.snapshot.ReplayMemory;
import dev.polystack.host.snapshot.Snapshot;
import dev.polystack.host.snapshot.SnapshotModules;
import dev.polystack.otel.counters.HostCounters;
import dev.polystack.plugin.api.Registers;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.Consumer;

/**
 * {@code analyze}: replays a snapshot through the same pipeline {@code dump} runs live (module
 * table, plug-in inspect and attach, native unwinder with plug-in splicing, frame naming), with
 * memory served from the recording. No ptrace, no /proc, no process.
 */
public final class ReplaySession {

  /** Makes one recorded read fail: of thread {@code tid}, or of the process when tid is 0. */
  public record Fault(int tid, MemoryImage.Read read) {}

  /**
   * @param injectedHits reads that ran into the injected fault
   * @param misses reads outside everything recorded (the replay took another path than live)
   */
  public record Result(DumpSession.Dump dump, int injectedHits, int misses) {}

  private final PluginRegistry plugins;
  private final PluginGuard guard;
  private final Consumer<String> warn;

  public ReplaySession(PluginRegistry plugins, PluginGuard guard, Consumer<String> warn) {
    this.plugins = plugins;
    this.guard = guard;
    this.warn = warn;
  }

  public Result replay(Snapshot s, SnapshotModules modules, Fault fault) {
    ReplayMemory processMemory = new ReplayMemory(s.processMemory(),
        fault != null && fault.tid() == 0 ? fault.read() : null);
    ProcessMaps maps = ProcessMaps.of(s.mappings());
    // Modules the snapshot left out on purpose (no frame used them) are no news on replay.
    Consumer<String> quiet = m -> {
      if (!modules.omitted().stream().anyMatch(p -> m.startsWith("cannot use " + p + " "))) {
        warn.accept(m);
      }
    };
    TargetProcess target = new TargetProcess(s.pid(), () -> maps, modules, processMemory.asHost(),
        plugins, guard, quiet);
    try {
      target.refresh();
    } catch (ProcReadException e) {
      throw new IllegalStateException("a recorded map cannot fail to read", e);
    }
    StackWalker walker = new StackWalker(s.maxDepth(), guard);
    Map<Integer, RawStack> raw = new LinkedHashMap<>();
    Map<Integer, String> states = new LinkedHashMap<>();
    Map<Integer, String> names = new LinkedHashMap<>();
    int hits = 0;
    int misses = 0;
    for (Snapshot.ThreadRecord t : s.threads()) {
      ReplayMemory memory = new ReplayMemory(t.memory(),
          fault != null && fault.tid() == t.tid() ? fault.read() : null);
      Registers regs = Registers.of(t.registers());
      raw.put(t.tid(), walker.walk(
          new CapturedThread(s.pid(), t.tid(), regs, memory, regs.sp(), 0, t.threadPointer(),
              CapturedThread.NO_PLANS), target.table()));
      states.put(t.tid(), t.state());
      names.put(t.tid(), t.name());
      hits += memory.injectedHits();
      misses += memory.misses();
    }
    Map<String, Long> losses = new LinkedHashMap<>(s.losses());
    DumpSession.Dump dump = DumpSession.finish(s.pid(), raw, names::get, states, target, losses);
    losses.remove(HostCounters.moduleNotOpened(SnapshotModules.NOT_RECORDED).name());
    hits += processMemory.injectedHits();
    misses += processMemory.misses();
    return new Result(dump, hits, misses);
  }
}
