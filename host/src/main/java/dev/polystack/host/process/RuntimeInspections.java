package dev.polystack.host.process;

import dev.polystack.host.cache.BoundedMap;
import dev.polystack.host.proc.MappedFile;
import dev.polystack.plugin.api.Inspection;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.FutureTask;
import java.util.function.Supplier;

/**
 * Each runtime plug-in's answer for each distinct binary, by file identity (device, inode, path
 * as the process maps it), shared by the processes one pipeline describes: {@code RuntimePlugin}
 * promises its plug-ins one inspection per binary, and a host-wide agent sees the same libc in
 * every new process (docs/benchmarks.md, "The agent"). Bounded, least recently used first out.
 *
 * <p>An inspection runs outside the lock, so a slow plug-in holds up only the callers that want
 * the same answer; an inspection that throws is forgotten, so the next caller asks again.
 */
public final class RuntimeInspections {
  /** Distinct binaries remembered by a pipeline. */
  public static final int CAPACITY = 512;

  private final Map<MappedFile.Identity, Map<String, FutureTask<Optional<Inspection>>>> answers;

  public RuntimeInspections(int capacity) {
    this.answers = BoundedMap.leastRecentlyUsed(capacity);
  }

  /** Plug-in {@code pluginId}'s answer for {@code file}: remembered, or {@code inspect}'s. */
  Optional<Inspection> of(MappedFile file, String pluginId,
      Supplier<Optional<Inspection>> inspect) {
    FutureTask<Optional<Inspection>> answer;
    boolean mine = false;
    synchronized (this) {
      Map<String, FutureTask<Optional<Inspection>>> byPlugin = answers.computeIfAbsent(
          file.identity(), k -> new HashMap<>());
      answer = byPlugin.get(pluginId);
      if (answer == null) {
        answer = new FutureTask<>(inspect::get);
        byPlugin.put(pluginId, answer);
        mine = true;
      }
    }
    if (mine) {
      answer.run();
    }
    try {
      return answer.get();
    } catch (ExecutionException e) {
      forget(file, pluginId, answer);
      if (e.getCause() instanceof RuntimeException r) {
        throw r;
      }
      if (e.getCause() instanceof Error err) {
        throw err;
      }
      throw new IllegalStateException(e.getCause());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return Optional.empty();
    }
  }

  private synchronized void forget(MappedFile file, String pluginId,
      FutureTask<Optional<Inspection>> failed) {
    Map<String, FutureTask<Optional<Inspection>>> byPlugin = answers.get(file.identity());
    if (byPlugin != null) {
      byPlugin.remove(pluginId, failed);
    }
  }
}
