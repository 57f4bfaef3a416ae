package dev.polystack.plugin.api.kit;

import dev.polystack.plugin.api.CodeRange;
import dev.polystack.plugin.api.ImageReadException;
import dev.polystack.plugin.api.Inspection;
import dev.polystack.plugin.api.ModuleImage;
import dev.polystack.plugin.api.ProcessContext;
import dev.polystack.plugin.api.RuntimeBinary;
import dev.polystack.plugin.api.RuntimeInstance;
import java.util.List;
import java.util.function.Supplier;

/** The kit self-tests' plug-ins claim a module by its {@code lua_pcall} export, as LuaJIT's does. */
final class LuaPcallInspection {
  private LuaPcallInspection() {}

  /** {@code runtime} over all of {@code image}'s code if it exports lua_pcall, else not mine. */
  static Inspection of(ModuleImage image, String runtime, Supplier<RuntimeInstance> attach) {
    try {
      if (image.symbol("lua_pcall").isEmpty()) {
        return Inspection.notMine();
      }
      List<CodeRange> code = image.executableRanges();
      return new Inspection.Supported(new RuntimeBinary() {
        @Override
        public String runtime() {
          return runtime;
        }

        @Override
        public List<String> evidence() {
          return List.of("lua_pcall");
        }

        @Override
        public List<CodeRange> codeRanges() {
          return code;
        }

        @Override
        public RuntimeInstance attach(ProcessContext process, long bias) {
          return attach.get();
        }
      });
    } catch (ImageReadException e) {
      return Inspection.notMine();
    }
  }
}
