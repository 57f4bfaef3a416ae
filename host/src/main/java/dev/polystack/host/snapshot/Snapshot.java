package dev.polystack.host.snapshot;

import dev.polystack.host.proc.MemoryMapping;
import java.util.List;
import java.util.Map;

/**
 * A recorded process: what {@code polystack analyze} needs to replay the stack walk of every
 * thread without the process. See docs/snapshot-format.md.
 *
 * @param pid the process id at recording time (plug-ins see it again on replay)
 * @param maxDepth frames per stack the walk was bounded to
 * @param threads every thread that was stopped and walked, in walk order
 * @param mappings the memory map as the host last read it before the walk
 * @param modules files behind the executable mappings, with content identities
 * @param processMemory reads made outside any thread walk (vDSO image, plug-in discovery)
 * @param liveStacks the stacks as the live walk printed them (dump text), for comparison
 * @param losses what the live walk could not capture, by reason
 */
public record Snapshot(
    int pid,
    int maxDepth,
    List<ThreadRecord> threads,
    List<MemoryMapping> mappings,
    List<ModuleRef> modules,
    MemoryImage processMemory,
    String liveStacks,
    Map<String, Long> losses) {

  /** Format version written; readers refuse a different major. */
  public static final int VERSION = 1;

  public Snapshot {
    threads = List.copyOf(threads);
    mappings = List.copyOf(mappings);
    modules = List.copyOf(modules);
    losses = Map.copyOf(losses);
  }

  /**
   * One thread: registers when it stopped and the memory its walk read.
   *
   * @param registers values by {@link dev.polystack.plugin.api.Register} ordinal
   * @param threadPointer its FS base when it stopped, 0 where the snapshot has none (written
   *     before the field was)
   */
  public record ThreadRecord(int tid, String name, String state, long[] registers,
      MemoryImage memory, long threadPointer) {

    /** A thread without a recorded thread pointer. */
    public ThreadRecord(int tid, String name, String state, long[] registers,
        MemoryImage memory) {
      this(tid, name, state, registers, memory, 0);
    }
  }

  /**
   * A module file, identified by content.
   *
   * @param size file size in bytes
   * @param sha256 lower-case hex digest of the whole file
   * @param needed a frame, a plug-in binding or the unwinder used it: replay cannot do without
   * @param bytes the file contents when embedded, else null
   */
  public record ModuleRef(String path, String buildId, long size, String sha256, boolean needed,
      byte[] bytes) {
    public boolean embedded() {
      return bytes != null;
    }

    ModuleRef withoutBytes() {
      return new ModuleRef(path, buildId, size, sha256, needed, null);
    }
  }
}
