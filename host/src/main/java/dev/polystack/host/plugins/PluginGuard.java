package dev.polystack.host.plugins;

import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Consumer;
import java.util.function.Supplier;

/**
 * Every call from the host into plug-in code goes through here: a plug-in that throws is
 * counted and reported once per plug-in and operation, and the host carries on without its
 * answer. A plug-in bug must never take the host down, or leave a target stopped.
 */
public final class PluginGuard {

  private final Consumer<String> reporter;
  private final Map<String, LongAdder> failures = new ConcurrentHashMap<>();

  /** @param reporter receives one warning line the first time a plug-in operation fails */
  public PluginGuard(Consumer<String> reporter) {
    this.reporter = reporter;
  }

  /** Runs {@code call}; returns empty if it threw or returned null. */
  public <T> Optional<T> call(LoadedPlugin plugin, String operation, Supplier<T> call) {
    try {
      return Optional.ofNullable(call.get());
    } catch (Throwable t) {
      // Out of memory and internal JVM errors are not the plug-in's to survive; a runaway
      // recursion in plug-in code is.
      if (t instanceof VirtualMachineError && !(t instanceof StackOverflowError)) {
        throw (VirtualMachineError) t;
      }
      fail(plugin, operation, "threw in " + operation + ": " + PluginLoader.oneLine(t));
      return Optional.empty();
    }
  }

  /**
   * Counts an answer of {@code operation} the host refused (it broke the API's contract) as a
   * failure of that operation, reported as one line the first time.
   */
  public void refuse(LoadedPlugin plugin, String operation, String why) {
    fail(plugin, operation, "gave a refused answer in " + operation + ": " + why);
  }

  /** Counts a failure of {@code pluginId.operation}; the first one is reported. */
  private void fail(LoadedPlugin plugin, String operation, String what) {
    LongAdder count = failures.computeIfAbsent(plugin.id() + "." + operation,
        k -> new LongAdder());
    count.increment();
    if (count.sum() == 1) {
      reporter.accept("plug-in '" + plugin.id() + "' " + what
          + " (ignored and counted; further failures are not shown)");
    }
  }

  /** Failures so far by {@code pluginId.operation}, sorted. */
  public Map<String, Long> failureCounts() {
    Map<String, Long> out = new TreeMap<>();
    failures.forEach((k, v) -> out.put(k, v.sum()));
    return out;
  }
}
