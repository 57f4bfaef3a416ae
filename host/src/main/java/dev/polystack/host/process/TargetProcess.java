package dev.polystack.host.process;

import dev.polystack.host.elf.ElfFile;
import dev.polystack.host.memory.PluginMemory;
import dev.polystack.host.memory.ProcessMemory;
import dev.polystack.host.modules.ElfModuleImage;
import dev.polystack.host.modules.ModuleOpenException;
import dev.polystack.host.modules.ModuleSource;
import dev.polystack.host.plugins.LoadedPlugin;
import dev.polystack.host.plugins.PluginGuard;
import dev.polystack.host.plugins.PluginRegistry;
import dev.polystack.host.proc.MappedFile;
import dev.polystack.host.proc.MappingKind;
import dev.polystack.host.proc.MemoryMapping;
import dev.polystack.host.proc.ProcFs;
import dev.polystack.host.proc.ProcReadException;
import dev.polystack.host.proc.ProcessMaps;
import dev.polystack.host.unwind.ElfUnwindModule;
import dev.polystack.otel.counters.Counters;
import dev.polystack.otel.counters.HostCounters;
import dev.polystack.plugin.api.CodeRange;
import dev.polystack.plugin.api.Inspection;
import dev.polystack.plugin.api.Mapping;
import dev.polystack.plugin.api.ProcessContext;
import dev.polystack.plugin.api.ProcessModule;
import dev.polystack.plugin.api.RuntimeInstance;
import dev.polystack.plugin.api.RuntimePlugin;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Consumer;

/**
 * The host's model of one target process: its modules (opened, with CFI and symbols), the
 * plug-in instances attached to it, and counters of what could not be loaded. {@link #refresh()}
 * re-reads the memory map; everything it builds is published as an immutable {@link ModuleTable}
 * so the sampler never waits for it.
 */
public final class TargetProcess implements ProcessContext, AutoCloseable {
  /**
   * Most modules open at once: each holds its file's mapping, parsed tables and caches, and a
   * target that maps ever more files (a dlopen churn, a hostile one) must not grow the host
   * without bound. Modules beyond it are not opened; their frames show as module+offset.
   */
  static final int MAX_MODULES = 2048;

  private record Identity(String path, long start, long inode) {}

  /** Where the memory map comes from: /proc live, the recorded map when replaying. */
  @FunctionalInterface
  public interface MapsSource {
    ProcessMaps read() throws ProcReadException;
  }

  private final int pid;
  private final int maxModules;
  private final MapsSource mapsSource;
  private final ModuleSource opener;
  /** The plug-ins' image of each open module: one per module, for inspection and discovery. */
  private final Map<LoadedModule, ElfModuleImage> images = new IdentityHashMap<>();
  /** {@link #modules()}, made when first asked after a refresh; null until then. */
  private List<ProcessModule> modules;
  private final ProcessMemory memory;
  private final PluginMemory pluginMemory;
  private final PluginRegistry plugins;
  private final PluginGuard guard;
  private final RuntimeInspections inspections;
  private final Consumer<String> warn;
  private final Map<Identity, LoadedModule> loaded = new HashMap<>();
  private final Map<Identity, List<RuntimeBinding>> bindings = new HashMap<>();
  /**
   * Mapped modules that could not be opened: not retried, counted and warned about once, for as
   * long as they stay mapped (a file mapped again at another address is another identity, and
   * is tried).
   */
  private final java.util.Set<Identity> failed = new java.util.HashSet<>();
  /** Mapped modules left unopened by the module cap, counted once; tried when room frees. */
  private final java.util.Set<Identity> overCap = new java.util.HashSet<>();
  private final Map<String, LongAdder> counters = new ConcurrentHashMap<>();
  private volatile ModuleTable table = ModuleTable.empty();
  private volatile List<Mapping> mappings = List.of();
  private volatile ProcessMaps maps = ProcessMaps.of(List.of());

  public TargetProcess(int pid, ProcFs proc, ModuleSource opener, ProcessMemory memory,
      PluginRegistry plugins, PluginGuard guard, Consumer<String> warn) {
    this(pid, () -> proc.forPid(pid).maps(), opener, memory, plugins, guard, warn);
  }

  public TargetProcess(int pid, MapsSource mapsSource, ModuleSource opener, ProcessMemory memory,
      PluginRegistry plugins, PluginGuard guard, Consumer<String> warn) {
    this(pid, mapsSource, opener, memory, plugins, guard, new RuntimeInspections(64), warn,
        MAX_MODULES);
  }

  /** A process whose binaries' inspections are shared through {@code inspections}. */
  public TargetProcess(int pid, ProcFs proc, ModuleSource opener, ProcessMemory memory,
      PluginRegistry plugins, PluginGuard guard, RuntimeInspections inspections,
      Consumer<String> warn) {
    this(pid, () -> proc.forPid(pid).maps(), opener, memory, plugins, guard, inspections, warn,
        MAX_MODULES);
  }

  /** @param maxModules most modules open at once (see {@link #MAX_MODULES}) */
  TargetProcess(int pid, MapsSource mapsSource, ModuleSource opener, ProcessMemory memory,
      PluginRegistry plugins, PluginGuard guard, RuntimeInspections inspections,
      Consumer<String> warn, int maxModules) {
    if (maxModules < 1) {
      throw new IllegalArgumentException("module cap must be positive: " + maxModules);
    }
    this.maxModules = maxModules;
    this.pid = pid;
    this.mapsSource = mapsSource;
    this.opener = opener;
    this.memory = memory;
    this.pluginMemory = new PluginMemory(memory);
    this.plugins = plugins;
    this.guard = guard;
    this.inspections = java.util.Objects.requireNonNull(inspections, "inspections");
    this.warn = warn;
  }

  @Override
  public int pid() {
    return pid;
  }

  /** Hands one warning line about this process to the session's reporter. */
  public void warn(String line) {
    warn.accept(line);
  }

  @Override
  public List<Mapping> mappings() {
    return mappings;
  }

  @Override
  public dev.polystack.plugin.api.RemoteMemory memory() {
    return pluginMemory;
  }

  /** Made when a plug-in asks, not at every refresh: most plug-ins never do. */
  @Override
  public synchronized List<ProcessModule> modules() {
    if (modules == null) {
      modules = loaded.values().stream()
          .sorted((a, b) -> Long.compareUnsigned(a.start(), b.start()))
          .map(m -> new ProcessModule(m.path(), m.start(), m.end(), m.bias(), imageOf(m)))
          .toList();
    }
    return modules;
  }

  private ElfModuleImage imageOf(LoadedModule m) {
    return images.computeIfAbsent(m,
        k -> new ElfModuleImage(k.elf(), k.path(), k.symbols()::symbolSource));
  }

  public ProcessMemory hostMemory() {
    return memory;
  }

  /** The memory map as last read by {@link #refresh()}. */
  public ProcessMaps maps() {
    return maps;
  }

  public ModuleTable table() {
    return table;
  }

  /**
   * Re-reads /proc/PID/maps, opens modules not seen before, lets plug-ins inspect them and
   * attach, and drops modules that were unmapped. Slow (file I/O): never call it while a target
   * thread is stopped.
   */
  public synchronized void refresh() throws ProcReadException {
    ProcessMaps maps = mapsSource.read();
    this.maps = maps;
    mappings = maps.mappings().stream().map(TargetProcess::toMapping).toList();
    Map<Identity, LoadedModule> seen = new HashMap<>();
    java.util.Set<Identity> mapped = new java.util.HashSet<>();
    Map<Identity, MappedFile> fresh = new java.util.LinkedHashMap<>();
    for (MappedFile m : maps.modules()) {
      if (m.executableMappings().isEmpty()) {
        continue;
      }
      Identity id = new Identity(m.path(), m.start(), m.inode());
      mapped.add(id);
      LoadedModule module = loaded.get(id);
      if (module != null) {
        seen.put(id, module);
      } else if (!failed.contains(id)) {
        fresh.put(id, m);
      }
    }
    // Modules already open stay; new ones fill what the cap leaves.
    for (Map.Entry<Identity, MappedFile> e : fresh.entrySet()) {
      Identity id = e.getKey();
      if (seen.size() >= maxModules) {
        overCap(id, e.getValue());
        continue;
      }
      LoadedModule module = open(e.getValue());
      if (module == null) {
        failed.add(id);
        continue;
      }
      overCap.remove(id);
      bindings.put(id, attach(module, e.getValue()));
      seen.put(id, module);
    }
    Optional<MemoryMapping> vdso = maps.first(MappingKind.VDSO);
    if (vdso.isPresent()) {
      Identity id = new Identity("[vdso]", vdso.get().start(), 0);
      mapped.add(id);
      LoadedModule module = loaded.get(id);
      if (module == null && !failed.contains(id)) {
        module = openVdso(vdso.get());
        if (module == null) {
          failed.add(id);
        }
      }
      if (module != null) {
        seen.put(id, module);
      }
    }
    failed.retainAll(mapped);
    overCap.retainAll(mapped);
    for (Identity gone : new ArrayList<>(loaded.keySet())) {
      if (!seen.containsKey(gone)) {
        List<RuntimeBinding> dropped = bindings.remove(gone);
        if (dropped != null) {
          dropped.forEach(b -> guard.call(b.plugin(), "detach", () -> {
            b.instance().detach();
            return null;
          }));
        }
      }
    }
    loaded.clear();
    loaded.putAll(seen);
    Set<LoadedModule> open = Collections.newSetFromMap(new IdentityHashMap<>());
    open.addAll(seen.values());
    images.keySet().retainAll(open);
    modules = null;
    List<RuntimeBinding> all = new ArrayList<>();
    bindings.values().forEach(all::addAll);
    for (RuntimeBinding b : all) {
      guard.call(b.plugin(), "mappingsChanged", () -> {
        b.instance().mappingsChanged(this);
        return null;
      });
    }
    List<RuntimeBinding> ranged = withDynamicRanges(all);
    ModuleTable current = table;
    if (!current.sameAs(seen.values(), ranged)) {
      // A new table only when something changed: what is derived from a table (named stacks)
      // stays valid, and is cached, for as long as the table is the same object.
      table = new ModuleTable(new ArrayList<>(seen.values()), ranged);
    }
  }

  private List<RuntimeBinding> withDynamicRanges(List<RuntimeBinding> all) {
    List<RuntimeBinding> out = new ArrayList<>();
    for (RuntimeBinding b : all) {
      List<CodeRange> dynamic =
          guard.call(b.plugin(), "dynamicCodeRanges", b.instance()::dynamicCodeRanges)
              .orElse(List.of());
      if (dynamic.isEmpty()) {
        out.add(b);
      } else {
        List<CodeRange> ranges = new ArrayList<>(b.ranges());
        ranges.addAll(dynamic);
        out.add(new RuntimeBinding(b.plugin(), b.instance(), b.module(), ranges));
      }
    }
    return out;
  }

  private LoadedModule open(MappedFile m) {
    try {
      ElfFile elf = opener.open(pid, m);
      MemoryMapping first = m.mappings().get(0);
      long bias = elf.offsetToVirtualAddress(first.offset()).stream()
          .map(vaddr -> first.start() - vaddr).findFirst().orElse(m.loadBase());
      return build(m.start(), m.end(), first.offset(), m.path(), elf, bias);
    } catch (ModuleOpenException e) {
      count(HostCounters.moduleNotOpened(e.reason()).name());
      warn.accept("cannot use " + m.path() + " of process " + pid + ": " + e.getMessage()
          + "; its frames show as module+offset");
      return null;
    }
  }

  /** A module over the cap: counted once, and one warning for the first. */
  private void overCap(Identity id, MappedFile m) {
    boolean first = overCap.isEmpty();
    if (overCap.add(id)) {
      count(HostCounters.MODULE_OVER_CAP.name());
      if (first) {
        warn.accept("process " + pid + " maps more than " + maxModules + " modules; "
            + m.path() + " and the others beyond that are not opened while it does, and their"
            + " frames show as module+offset");
      }
    }
  }

  private LoadedModule openVdso(MemoryMapping vdso) {
    try {
      ElfFile elf = opener.openVdso(vdso, memory);
      return build(vdso.start(), vdso.end(), 0, "[vdso]", elf,
          vdso.start() - elf.imageStartAddress());
    } catch (ModuleOpenException e) {
      count(HostCounters.moduleNotOpened(e.reason()).name());
      return null;
    }
  }

  private LoadedModule build(long start, long end, long offset, String path, ElfFile elf,
      long bias) {
    String buildId;
    try {
      buildId = elf.buildId().map(b -> b.hex()).orElse("");
    } catch (dev.polystack.host.elf.ElfParseException e) {
      buildId = "";
    }
    return new LoadedModule(start, end, offset, path, buildId, elf,
        new ElfUnwindModule(elf, bias, path),
        new NativeSymbols(elf, path, opener.debugFiles(pid), this::count));
  }

  private List<RuntimeBinding> attach(LoadedModule module, MappedFile file) {
    List<RuntimeBinding> out = new ArrayList<>();
    ElfModuleImage image = imageOf(module);
    for (LoadedPlugin p : plugins.runtimePlugins()) {
      RuntimePlugin plugin = (RuntimePlugin) p.plugin();
      Optional<Inspection> answer = inspections.of(file, p.id(),
          () -> guard.call(p, "inspect", () -> plugin.inspect(image)));
      if (answer.orElse(null) instanceof Inspection.Unsupported u) {
        count(Counters.pluginCounter(p.id(), "unsupported"));
        warn.accept(p.id() + ": " + u.reason());
      }
      if (!(answer.orElse(null) instanceof Inspection.Supported s)) {
        continue;
      }
      Optional<RuntimeInstance> instance = guard.call(p, "attach", () -> {
        try {
          return s.binary().attach(this, module.bias());
        } catch (dev.polystack.plugin.api.AttachException e) {
          warn.accept(p.id() + " cannot attach to " + module.path() + " of process " + pid + ": "
              + e.getMessage());
          return null;
        }
      });
      if (instance.isEmpty()) {
        count(Counters.pluginCounter(p.id(), "attach_failed"));
        continue;
      }
      List<CodeRange> ranges = guard.call(p, "codeRanges", s.binary()::codeRanges)
          .orElse(List.of()).stream().map(r -> r.shift(module.bias())).toList();
      out.add(new RuntimeBinding(p, instance.get(), module.path(), ranges));
    }
    return out;
  }

  private static Mapping toMapping(MemoryMapping m) {
    long device = ((long) m.device().major() << 8) | m.device().minor();
    return new Mapping(m.start(), m.end(), m.offset(), m.permissions().readable(),
        m.permissions().writable(), m.permissions().executable(), device, m.inode(), m.path(),
        m.deleted());
  }

  /** Plug-in and module counters since the last call, then reset. */
  public Map<String, Long> getAndResetCounters() {
    Map<String, Long> out = new HashMap<>();
    counters.forEach((k, v) -> {
      long n = v.sumThenReset();
      if (n != 0) {
        out.merge(k, n, Long::sum);
      }
    });
    for (RuntimeBinding b : table.bindings()) {
      guard.call(b.plugin(), "getAndResetCounters", b.instance()::getAndResetCounters)
          .orElse(Map.of())
          .forEach((k, v) ->
              out.merge(Counters.pluginCounter(b.plugin().id(), k), v, Long::sum));
    }
    return out;
  }

  void count(String key) {
    counters.computeIfAbsent(key, k -> new LongAdder()).increment();
  }

  @Override
  public synchronized void close() {
    for (List<RuntimeBinding> list : bindings.values()) {
      for (RuntimeBinding b : list) {
        guard.call(b.plugin(), "detach", () -> {
          b.instance().detach();
          return null;
        });
      }
    }
    bindings.clear();
    loaded.clear();
    table = ModuleTable.empty();
  }
}
