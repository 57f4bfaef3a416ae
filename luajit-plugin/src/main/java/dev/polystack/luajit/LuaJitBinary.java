package dev.polystack.luajit;

import dev.polystack.plugin.api.CodeRange;
import dev.polystack.plugin.api.DiscoveredOffset;
import dev.polystack.plugin.api.ProcessContext;
import dev.polystack.plugin.api.Provenance;
import dev.polystack.plugin.api.RuntimeBinary;
import dev.polystack.plugin.api.RuntimeInstance;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/** What detection and offset discovery learned about one LuaJIT binary. */
record LuaJitBinary(String module, String buildId, List<String> evidence, CodeRange interpreter,
    Layout layout, List<DiscoveredOffset> discovered) implements RuntimeBinary {

  LuaJitBinary {
    Objects.requireNonNull(module, "module");
    Objects.requireNonNull(buildId, "buildId");
    evidence = List.copyOf(evidence);
    Objects.requireNonNull(interpreter, "interpreter");
    Objects.requireNonNull(layout, "layout");
    discovered = List.copyOf(discovered);
  }

  @Override
  public String runtime() {
    return "LuaJIT 2.1 (" + (layout.luaStateSize() > Offsets.UPSTREAM_LUA_STATE ? "OpenResty"
        : "upstream") + ", GC64, global_State " + layout.family() + ")";
  }

  @Override
  public List<DiscoveredOffset> offsets() {
    List<DiscoveredOffset> all = new ArrayList<>(discovered);
    all.add(new DiscoveredOffset("interpreter", interpreter.start(), Provenance.UNWIND_TABLE,
        String.format("the single ~16 KiB .eh_frame FDE 0x%x-0x%x", interpreter.start(),
            interpreter.end())));
    all.add(new DiscoveredOffset("GG_G2DISP", 0, Provenance.RUNTIME_VALIDATION,
        "found per process: G = r14 - G2DISP where G->cur_L->glref == G"));
    all.add(new DiscoveredOffset("J->trace", 0, Provenance.RUNTIME_VALIDATION,
        "per process: the candidate for G2DISP whose traces check out (gct, traceno)"));
    return all;
  }

  @Override
  public List<CodeRange> codeRanges() {
    return List.of(interpreter);
  }

  @Override
  public RuntimeInstance attach(ProcessContext process, long loadBias) {
    return new LuaJitInstance(this, process, loadBias);
  }
}
