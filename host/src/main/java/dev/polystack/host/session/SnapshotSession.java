package dev.polystack.host.session;

import dev.polystack.host.elf.ElfParseException;
import dev.polystack.host.memory.ProcessMemory;
import dev.polystack.host.plugins.PluginGuard;
import dev.polystack.host.plugins.PluginRegistry;
import dev.polystack.host.proc.ProcFs;
import dev.polystack.host.proc.ProcessMaps;
import dev.polystack.host.process.LoadedModule;
import dev.polystack.host.process.RuntimeBinding;
import dev.polystack.host.process.TargetProcess;
import dev.polystack.host.sampling.SamplingException;
import dev.polystack.host.snapshot.MemoryImage;
import dev.polystack.host.snapshot.RecordingMemory;
import dev.polystack.host.snapshot.Snapshot;
import dev.polystack.host.snapshot.SnapshotModules;
import dev.polystack.plugin.api.Frame;
import dev.polystack.plugin.api.Register;
import dev.polystack.plugin.api.Registers;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;
import java.util.function.Function;

/**
 * {@code snapshot}: a {@code dump} whose memory reads are recorded, so that {@code analyze} can
 * replay the same walk later without the process. Everything a walk reads goes through the
 * recorded memory: registers, the stack and heap words the unwinder and the plug-ins read, the
 * vDSO image and whatever plug-ins read while the host refreshed the memory map.
 */
public final class SnapshotSession {

  /** Which module files go into the snapshot itself (the rest are referenced by content). */
  public enum Embed { NONE, NEEDED, ALL }

  /** The stacks as the live walk saw them, and the snapshot that replays them. */
  public record Result(DumpSession.Dump dump, Snapshot snapshot) {}

  private final DumpSession session;

  public SnapshotSession(ProcFs proc, PluginRegistry plugins, PluginGuard guard,
      Consumer<String> warn) {
    this.session = new DumpSession(proc, plugins, guard, warn);
  }

  /**
   * @param render prints a dump as {@code dump} would (stored with the snapshot for comparison)
   */
  public Result record(int pid, int maxDepth, Embed embed,
      Function<DumpSession.Dump, String> render) throws SamplingException {
    Recorder recorder = new Recorder();
    DumpSession.Dump dump = session.dump(pid, maxDepth, recorder);
    Set<String> needed = new HashSet<>(recorder.bound);
    for (DumpSession.ThreadDump t : dump.threads()) {
      for (Frame f : t.frames()) {
        if (Frame.NATIVE.equals(f.type()) && !f.module().isEmpty()) {
          needed.add(f.module());
        }
      }
    }
    Map<String, Snapshot.ModuleRef> modules = new LinkedHashMap<>();
    for (LoadedModule m : recorder.modules) {
      if (m.path().startsWith("[") || modules.containsKey(m.path())) {
        continue; // the vDSO is replayed from recorded memory
      }
      byte[] bytes;
      try {
        bytes = m.elf().source().readAll();
      } catch (ElfParseException e) {
        throw new SamplingException("cannot copy a module into the snapshot: " + e.getMessage());
      }
      boolean need = needed.contains(m.path());
      boolean keep = embed == Embed.ALL || (embed == Embed.NEEDED && need);
      modules.put(m.path(), new Snapshot.ModuleRef(m.path(), m.buildId(), bytes.length,
          SnapshotModules.sha256(bytes), need, keep ? bytes : null));
    }
    List<Snapshot.ThreadRecord> threads = new ArrayList<>();
    for (DumpSession.ThreadDump t : dump.threads()) {
      Registers regs = recorder.registers.get(t.tid());
      long[] values = new long[Register.values().length];
      for (Register r : Register.values()) {
        values[r.ordinal()] = regs.get(r);
      }
      threads.add(new Snapshot.ThreadRecord(t.tid(), t.name(), t.state(), values,
          recorder.threads.get(t.tid()).image(),
          recorder.threadPointers.getOrDefault(t.tid(), 0L)));
    }
    Snapshot snapshot = new Snapshot(pid, maxDepth, threads, recorder.maps.mappings(),
        new ArrayList<>(modules.values()), recorder.process.image(), render.apply(dump),
        recorder.losses);
    return new Result(dump, snapshot);
  }

  /** Wraps every memory the dump reads and keeps what the snapshot needs of the target. */
  private static final class Recorder implements DumpSession.Hook {
    final MemoryImage.Recorder process = new MemoryImage.Recorder();
    final Map<Integer, MemoryImage.Recorder> threads = new ConcurrentHashMap<>();
    final Map<Integer, Registers> registers = new ConcurrentHashMap<>();
    final Map<Integer, Long> threadPointers = new ConcurrentHashMap<>();
    final Set<String> bound = new HashSet<>();
    List<LoadedModule> modules = List.of();
    ProcessMaps maps = ProcessMaps.of(List.of());
    Map<String, Long> losses = Map.of();

    @Override
    public ProcessMemory process(ProcessMemory live) {
      return RecordingMemory.ofHost(live, process);
    }

    @Override
    public dev.polystack.plugin.api.RemoteMemory thread(int tid, Registers regs,
        long threadPointer, dev.polystack.plugin.api.RemoteMemory live) {
      registers.put(tid, regs);
      threadPointers.put(tid, threadPointer);
      return RecordingMemory.of(live,
          threads.computeIfAbsent(tid, t -> new MemoryImage.Recorder()));
    }

    @Override
    public void walked(TargetProcess target, Map<String, Long> sessionLosses) {
      modules = target.table().modules();
      maps = target.maps();
      losses = sessionLosses;
      for (RuntimeBinding b : target.table().bindings()) {
        bound.add(b.module());
      }
    }
  }
}
