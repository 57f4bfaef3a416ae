package dev.polystack.host.alloc;

import dev.polystack.host.bpf.AllocationProbes.Kind;
import dev.polystack.host.elf.ElfParseException;
import dev.polystack.host.elf.Fde;
import dev.polystack.host.process.LoadedModule;
import dev.polystack.host.process.ModuleTable;
import dev.polystack.plugin.api.AllocatorSite;
import dev.polystack.plugin.api.Mapping;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;

/**
 * A runtime's allocator function, named by its plug-in as a runtime address, where a uprobe
 * can take it: the file that maps it, the file offset (uprobes take file offsets) and the
 * function's range in the process (from its FDE), which the internal-call filter needs: a
 * lua_Alloc built on the C library's realloc must not count its calls twice.
 *
 * @param file the module as polystack opens it (through /proc/PID/root)
 * @param offset file offset of the function's entry
 * @param kind what its arguments mean
 * @param name what the plug-in called it
 * @param address its runtime address
 * @param range the function in the process, {@code [start, end)}
 */
public record RuntimeAllocator(Path file, long offset, Kind kind, String name, long address,
    long[] range, long[] moduleText) {

  /**
   * Where {@code site} is in process {@code pid}, or empty when it is not code of a mapped
   * file (JIT code, anonymous or deleted memory): a uprobe needs a file.
   */
  public static Optional<RuntimeAllocator> resolve(int pid, List<Mapping> mappings,
      ModuleTable modules, AllocatorSite site) {
    long at = site.address();
    Mapping m = mappings.stream().filter(x -> x.executable() && x.contains(at)).findFirst()
        .orElse(null);
    if (m == null || m.isAnonymous() || m.isPseudo() || m.deleted()
        || !m.path().startsWith("/")) {
      return Optional.empty();
    }
    long offset = m.fileOffset() + (at - m.start());
    long[] range = {at, at + 1};
    LoadedModule module = modules.moduleAt(at);
    if (module != null && module.path().equals(m.path())) {
      try {
        Optional<Fde> fde = module.elf().findFde(at - module.bias());
        if (fde.isPresent() && fde.get().pcBegin() + module.bias() <= at) {
          long start = fde.get().pcBegin() + module.bias();
          range = new long[] {start, start + Math.max(1, fde.get().pcRange())};
        }
      } catch (ElfParseException e) {
        // The entry alone: the internal-call filter then misses calls from its body.
      }
    }
    Kind kind = switch (site.convention()) {
      case LUA_ALLOC -> Kind.LUA_ALLOC;
    };
    return Optional.of(new RuntimeAllocator(Path.of("/proc/" + pid + "/root" + m.path()), offset,
        kind, site.name(), at, range, new long[] {m.start(), m.end()}));
  }
}
