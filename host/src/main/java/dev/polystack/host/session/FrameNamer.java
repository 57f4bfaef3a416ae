package dev.polystack.host.session;

import dev.polystack.host.cache.BoundedMap;
import dev.polystack.host.process.LoadedModule;
import dev.polystack.host.process.ModuleTable;
import dev.polystack.host.process.NativeSymbols;
import dev.polystack.host.sampling.RawFrame;
import dev.polystack.host.sampling.RawStack;
import dev.polystack.plugin.api.Frame;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Names native frames after the target runs again: symbol lookups need no consistent view, so
 * they stay out of the target's pause. Frames are cached by module and address, bounded, and
 * equal frames are shared so a long recording holds each distinct frame once.
 */
public final class FrameNamer {
  static final int MAX_CACHED = 1 << 16;

  /** By the module's identity: modules are unique per table entry, and cheap to compare so. */
  private record Key(LoadedModule module, long pc, boolean exact) {
    @Override
    public boolean equals(Object o) {
      return o instanceof Key k && k.module == module && k.pc == pc && k.exact == exact;
    }

    @Override
    public int hashCode() {
      return (System.identityHashCode(module) * 31 + Long.hashCode(pc)) * 31 + (exact ? 1 : 0);
    }
  }

  private final Map<Key, Frame> cache =
      BoundedMap.leastRecentlyUsed(MAX_CACHED);

  /** The frames of {@code stack}, named with the modules of {@code table}. */
  public List<Frame> name(RawStack stack, ModuleTable table) {
    List<Frame> out = new ArrayList<>(stack.frames().size());
    for (RawFrame raw : stack.frames()) {
      if (raw instanceof RawFrame.Runtime r) {
        out.add(r.frame());
      } else {
        RawFrame.Native n = (RawFrame.Native) raw;
        LoadedModule module = table.moduleAt(n.lookupPc());
        out.add(cache.computeIfAbsent(new Key(module, n.pc(), n.exact()),
            k -> nativeFrame(module, n)));
      }
    }
    return out;
  }

  private static Frame nativeFrame(LoadedModule module, RawFrame.Native n) {
    if (module == null) {
      return new Frame(Frame.NATIVE, n.pc(), "", "", 0, 0, "", Map.of());
    }
    String name = module.symbols().lookup(n.lookupPc() - module.bias())
        .map(m -> NativeSymbols.displayName(m.symbol().name()))
        .orElse("");
    return new Frame(Frame.NATIVE, n.pc(), name, "", 0, 0, module.path(), Map.of());
  }
}
