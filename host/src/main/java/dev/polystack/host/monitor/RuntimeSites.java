package dev.polystack.host.monitor;

import dev.polystack.host.memory.ProcessMemory;
import dev.polystack.host.modules.ModuleOpener;
import dev.polystack.host.plugins.PluginGuard;
import dev.polystack.host.plugins.PluginRegistry;
import dev.polystack.host.proc.ProcFs;
import dev.polystack.host.proc.ProcReadException;
import dev.polystack.host.process.RuntimeBinding;
import dev.polystack.host.process.TargetProcess;
import dev.polystack.plugin.api.Capability;
import dev.polystack.plugin.api.WatchPoint;
import dev.polystack.plugin.api.WatchPointException;
import java.util.Optional;
import java.util.function.Consumer;

/**
 * Resolves runtime-level sites ({@code lua:CHUNK:LINE}) to memory a hardware data breakpoint
 * watches, by asking the runtime plug-ins bound to the process ({@link Capability#WATCH_SITES}).
 */
public interface RuntimeSites {
  /** No plug-ins: every runtime site is refused. */
  RuntimeSites NONE = (pid, spec) -> {
    throw new ProbeSites.SiteException(spec + ": no runtime plug-in is loaded to resolve it");
  };

  /**
   * The memory {@code spec} names in process {@code pid}.
   *
   * @throws ProbeSites.SiteException with the user's one line when nothing resolves it
   */
  WatchPoint resolve(int pid, SiteSpec spec) throws ProbeSites.SiteException;

  /** Through {@code plugins}, bound to the process as a recording binds them. */
  static RuntimeSites of(ProcFs proc, PluginRegistry plugins, PluginGuard guard,
      Consumer<String> warn) {
    return (pid, spec) -> {
      try (TargetProcess target = new TargetProcess(pid, proc, new ModuleOpener(),
          ProcessMemory.of(pid), plugins, guard, warn)) {
        try {
          target.refresh();
        } catch (ProcReadException e) {
          throw new ProbeSites.SiteException(spec + ": cannot read process " + pid + " ("
              + e.getMessage() + ")");
        }
        boolean asked = false;
        for (RuntimeBinding b : target.table().bindings()) {
          if (!b.plugin().descriptor().capabilities().contains(Capability.WATCH_SITES)) {
            continue;
          }
          asked = true;
          Optional<WatchPoint> w;
          try {
            w = b.instance().watchPoint(spec.toString());
          } catch (WatchPointException e) {
            throw new ProbeSites.SiteException(e.getMessage());
          } catch (RuntimeException e) {
            throw new ProbeSites.SiteException(spec + ": plug-in '" + b.plugin().id()
                + "' failed to resolve it (" + e + ")");
          }
          if (w.isPresent()) {
            return w.get();
          }
        }
        throw new ProbeSites.SiteException(spec + ": process " + pid + " runs no "
            + (spec.module().equals(SiteSpec.LUA) ? "LuaJIT" : spec.module()) + " (no"
            + " runtime plug-in " + (asked ? "that resolves such sites" : "") + " recognised"
            + " one in its modules); check the pid, and that polystack plugins lists luajit");
      }
    };
  }
}
