package dev.polystack.luajit;

import dev.polystack.plugin.api.CodeRange;
import dev.polystack.plugin.api.ImageReadException;
import dev.polystack.plugin.api.Inspection;
import dev.polystack.plugin.api.ModuleImage;
import dev.polystack.plugin.api.ModuleSymbol;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * Decides whether a module contains LuaJIT, from content only. File names are never consulted:
 * allow-lists of names broke users who link LuaJIT statically into their own programs.
 */
final class Detection {

  /**
   * buildvm emits one FDE for the whole interpreter (lj_vm_asm_begin .. lj_vm_ffi_call), about
   * 16.4 KiB in every 2.1 build measured (16418 .. 17447 bytes); nothing else in LuaJIT comes
   * close. The bounds leave room for builds with other options without catching big C functions
   * of unrelated programs in a typical size.
   */
  static final long MIN_INTERPRETER_FDE = 12_000;

  static final long MAX_INTERPRETER_FDE = 24_000;

  /** The C API functions every LuaJIT build exports; three of them make a Lua implementation. */
  private static final List<String> API_EXPORTS =
      List.of("lua_pcall", "lua_newstate", "lua_close", "luaL_newstate", "lua_gc", "lua_resume");

  private static final byte[] LUAJIT_STRING = "LuaJIT".getBytes(StandardCharsets.US_ASCII);

  private Detection() {}

  static Inspection inspect(ModuleImage image) {
    try {
      return decide(image);
    } catch (ImageReadException e) {
      // A malformed image is not something we can say is LuaJIT.
      return Inspection.notMine();
    }
  }

  private static Inspection decide(ModuleImage image) throws ImageReadException {
    List<String> evidence = new ArrayList<>();
    int apiExports = 0;
    boolean luaJitExport = false;
    for (ModuleSymbol s : image.dynamicSymbols()) {
      if (!s.exported() || !s.function()) {
        continue;
      }
      if (API_EXPORTS.contains(s.name())) {
        apiExports++;
      } else if (s.name().startsWith("luaJIT_")) {
        luaJitExport = true;
      }
    }
    if (apiExports < 3 && !luaJitExport) {
      return Inspection.notMine();
    }
    evidence.add(apiExports + " Lua C API exports" + (luaJitExport ? " and luaJIT_* exports" : ""));
    boolean named = !image.findInReadOnlyData(LUAJIT_STRING, 1).isEmpty();
    if (named) {
      evidence.add("\"LuaJIT\" in read-only data");
    }
    if (!named && !luaJitExport) {
      // PUC Lua exports the same C API; without a LuaJIT mark this is not ours.
      return Inspection.notMine();
    }
    Optional<CodeRange> interpreter = interpreterRange(image.unwindRanges());
    String id = image.buildId().map(b -> "build id " + b).orElse("no build id");
    if (interpreter.isEmpty()) {
      return new Inspection.Unsupported(
          "LuaJIT found in " + image.name() + " (" + id + ") but no interpreter FDE of "
              + MIN_INTERPRETER_FDE + ".." + MAX_INTERPRETER_FDE
              + " bytes in .eh_frame (built with LUAJIT_NO_UNWIND?)",
          evidence);
    }
    CodeRange vm = interpreter.get();
    evidence.add(String.format("interpreter FDE 0x%x-0x%x (%d bytes)", vm.start(), vm.end(), vm.size()));
    List<String> problems = new ArrayList<>();
    Offsets.Discovery offsets = Offsets.discover(image, problems);
    if (offsets == null) {
      return new Inspection.Unsupported("LuaJIT found in " + image.name() + " (" + id + ") but its"
          + " layout is not supported: " + String.join("; ", problems), evidence);
    }
    return new Inspection.Supported(new LuaJitBinary(image.name(), id, evidence, vm,
        offsets.layout(), offsets.provenance()));
  }

  /** The largest FDE in the interpreter's size band (a C function rarely reaches it). */
  static Optional<CodeRange> interpreterRange(List<CodeRange> fdes) {
    CodeRange found = null;
    for (CodeRange r : fdes) {
      if (r.size() >= MIN_INTERPRETER_FDE && r.size() < MAX_INTERPRETER_FDE) {
        if (found != null && found.size() > r.size()) {
          continue;
        }
        found = r;
      }
    }
    return found == null
        ? Optional.empty()
        : Optional.of(new CodeRange(found.start(), found.end(), "luajit interpreter"));
  }
}
