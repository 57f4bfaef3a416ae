package dev.polystack.luajit;

import dev.polystack.plugin.api.CodeRange;
import dev.polystack.plugin.api.RuntimeBinary;
import java.util.List;
import java.util.Objects;

/** What detection learned about one LuaJIT binary. */
record LuaJitBinary(String module, String buildId, List<String> evidence, CodeRange interpreter)
    implements RuntimeBinary {

  LuaJitBinary {
    Objects.requireNonNull(module, "module");
    Objects.requireNonNull(buildId, "buildId");
    evidence = List.copyOf(evidence);
    Objects.requireNonNull(interpreter, "interpreter");
  }

  @Override
  public String runtime() {
    return "LuaJIT 2.1";
  }

  @Override
  public List<CodeRange> codeRanges() {
    return List.of(interpreter);
  }
}
