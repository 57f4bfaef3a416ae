package dev.polystack.host.pipeline;

import dev.polystack.host.cache.BoundedMap;
import dev.polystack.host.process.LoadedModule;
import dev.polystack.otel.model.HtlHash;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

/**
 * The htlhash of each mapped file, for the OTLP mapping table, computed once per file (by path
 * and build id) for a run (the pipeline's whole host, or a ptrace record) and read through /proc/PID/root, so a process in another
 * mount namespace (a container) is hashed by its own file. Bounded: the least recently used
 * go first.
 */
public final class ModuleHashes {
  static final int MAX_FILES = 4096;

  private final Map<String, String> byFile = BoundedMap.leastRecentlyUsed(MAX_FILES);

  /** The module's file's htlhash; empty for pseudo files or a file that cannot be read. */
  public String of(int pid, LoadedModule m) {
    return of(pid, m.path(), m.buildId());
  }

  /** The htlhash of the file at {@code path} as process {@code pid} sees it. */
  public String of(int pid, String path, String buildId) {
    if (!path.startsWith("/")) {
      return "";
    }
    String key = path + '\0' + buildId;
    String known = byFile.get(key);
    if (known != null) {
      return known;
    }
    String hash = "";
    for (Path candidate : List.of(Path.of("/proc/" + pid + "/root" + path), Path.of(path))) {
      try {
        hash = HtlHash.of(candidate);
        break;
      } catch (IOException | RuntimeException e) {
        // try the next, else leave it empty: the GNU build id may still identify it
      }
    }
    byFile.put(key, hash);
    return hash;
  }
}
