package dev.polystack.host.process;

import dev.polystack.host.unwind.NativeUnwinder;
import dev.polystack.host.unwind.UnwindModule;
import java.util.Comparator;
import java.util.List;

/**
 * An immutable snapshot of the target's loaded modules and plug-in bindings; the sampler reads
 * it without locks while a refresh builds the next one.
 */
public final class ModuleTable implements NativeUnwinder.ModuleLookup {
  private final LoadedModule[] modules;
  private final List<RuntimeBinding> bindings;

  ModuleTable(List<LoadedModule> modules, List<RuntimeBinding> bindings) {
    this.modules = modules.stream()
        .sorted(Comparator.comparingLong(LoadedModule::start))
        .toArray(LoadedModule[]::new);
    this.bindings = List.copyOf(bindings);
  }

  static ModuleTable empty() {
    return new ModuleTable(List.of(), List.of());
  }

  /** Whether this table holds exactly {@code others} (the same objects) and {@code bindings}. */
  boolean sameAs(java.util.Collection<LoadedModule> others, List<RuntimeBinding> bindings) {
    if (others.size() != modules.length || !this.bindings.equals(bindings)) {
      return false;
    }
    java.util.Set<LoadedModule> mine =
        java.util.Collections.newSetFromMap(new java.util.IdentityHashMap<>());
    mine.addAll(java.util.Arrays.asList(modules));
    for (LoadedModule m : others) {
      if (!mine.contains(m)) {
        return false;
      }
    }
    return true;
  }

  public List<LoadedModule> modules() {
    return List.of(modules);
  }

  public List<RuntimeBinding> bindings() {
    return bindings;
  }

  /** The module containing a runtime address, by binary search; null if none. */
  public LoadedModule moduleAt(long address) {
    int lo = 0;
    int hi = modules.length - 1;
    while (lo <= hi) {
      int mid = (lo + hi) >>> 1;
      LoadedModule m = modules[mid];
      if (Long.compareUnsigned(address, m.start()) < 0) {
        hi = mid - 1;
      } else if (Long.compareUnsigned(address, m.end()) >= 0) {
        lo = mid + 1;
      } else {
        return m;
      }
    }
    return null;
  }

  /** The binding whose code contains {@code pc}, or null. */
  public RuntimeBinding bindingAt(long pc) {
    for (int i = 0; i < bindings.size(); i++) { // indexed: per frame, no iterator
      RuntimeBinding b = bindings.get(i);
      if (b.owns(pc)) {
        return b;
      }
    }
    return null;
  }

  @Override
  public UnwindModule find(long pc) {
    LoadedModule m = moduleAt(pc);
    return m == null ? null : m.unwind();
  }
}
