package dev.polystack.luajit;

import dev.polystack.plugin.api.DiscoveredOffset;
import dev.polystack.plugin.api.ImageReadException;
import dev.polystack.plugin.api.ModuleImage;
import dev.polystack.plugin.api.ModuleSymbol;
import dev.polystack.plugin.api.Provenance;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * Discovers the structure offsets of one LuaJIT binary from its public symbols and code, never
 * from its name or version string (which does not identify the layout). What the binary cannot
 * tell is left to runtime validation against a live process (GG_G2DISP, the trace array).
 */
final class Offsets {
  static final int UPSTREAM_LUA_STATE = 96;

  /** The result: a layout, and how each value was found, for {@code inspect}. */
  record Discovery(Layout layout, List<DiscoveredOffset> provenance) {}

  private Offsets() {}

  /** Empty with a reason when a needed value cannot be found. */
  static Discovery discover(ModuleImage image, List<String> problems) throws ImageReadException {
    List<DiscoveredOffset> found = new ArrayList<>();
    Optional<Disassembly.Store> curL = Disassembly.curLFromLuaClose(image);
    if (curL.isEmpty()) {
      problems.add("no 'movq $0,disp(G)' store in lua_close: cannot find cur_L");
      return null;
    }
    int curLValue = curL.get().displacement();
    found.add(new DiscoveredOffset("cur_L", curLValue, Provenance.DISASSEMBLY, curL.get().text()));
    int stateSize = UPSTREAM_LUA_STATE;
    Optional<Integer> exdata = exdataOffset(image);
    if (exdata.isPresent()) {
      stateSize = exdata.get() + 16;
      found.add(new DiscoveredOffset("sizeof(lua_State)", stateSize, Provenance.DISASSEMBLY,
          "lua_getexdata reads L->exdata at 0x" + Integer.toHexString(exdata.get())
              + " (OpenResty: exdata, exdata2 end the struct)"));
    } else {
      found.add(new DiscoveredOffset("sizeof(lua_State)", stateSize, Provenance.SYMBOL,
          "no lua_getexdata export: upstream layout"));
    }
    Layout layout = Layout.forCurL(curLValue, stateSize);
    if (layout == null) {
      problems.add("cur_L at " + curLValue + " matches no known global_State layout");
      return null;
    }
    String table = "global_State layout " + layout.family() + " (selected by cur_L)";
    found.add(new DiscoveredOffset("vmstate", layout.vmstate(), Provenance.BUILTIN_TABLE, table));
    found.add(new DiscoveredOffset("jit_base", layout.jitBase(), Provenance.BUILTIN_TABLE, table));
    found.add(new DiscoveredOffset("GCstr.len", layout.strLen(), Provenance.BUILTIN_TABLE, table));
    return new Discovery(layout, found);
  }

  /** {@code mov disp8(%rdi),%rax; ret} in lua_getexdata gives the exdata offset. */
  private static Optional<Integer> exdataOffset(ModuleImage image) throws ImageReadException {
    Optional<ModuleSymbol> fn = image.symbol("lua_getexdata");
    if (fn.isEmpty()) {
      return Optional.empty();
    }
    byte[] code = new byte[16];
    int n = image.read(fn.get().value(), code, 0, code.length);
    for (int i = 0; i + 4 <= n; i++) {
      if ((code[i] & 0xff) == 0x48 && (code[i + 1] & 0xff) == 0x8b
          && (code[i + 2] & 0xc7) == 0x47) {
        int disp = code[i + 3] & 0xff;
        if (disp >= UPSTREAM_LUA_STATE && disp < 0x100) {
          return Optional.of(disp);
        }
      }
    }
    return Optional.empty();
  }
}
