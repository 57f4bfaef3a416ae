package dev.polystack.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A coroutine that Lua resumed keeps its resumer's frames below it (docs/luajit.md,
 * "Coroutines"): samples in a coroutine.wrap generator's body, with the JIT on, name the
 * generator, the wrap function, the driver and the main chunk, in bpf mode, where the resumer's
 * state is copied at the tick.
 */
class LuaJitResumerTest {
  /**
   * The share of the generator's samples that may lack the resumer: a tick between the resume
   * and the coroutine's first frame, or inside vm_resume itself.
   */
  static final double RARE = 0.03;

  @TempDir Path dir;

  @ParameterizedTest
  @ValueSource(strings = {"upstream", "openresty"})
  void generatorSamplesKeepTheirResumer(String buildName) throws Exception {
    LuaJitBuild build = buildName.equals("upstream") ? LuaJitBuild.upstream()
        : LuaJitBuild.openResty();
    try (InputStream in = getClass().getResourceAsStream("/lua/generator.lua")) {
      Files.copy(in, dir.resolve("generator.lua"));
    }
    Distribution.Result result = Distribution.run(dir, build.env(), "record", "--rate", "199",
        "--format", "folded", "-o", "out.folded", "--", build.executable().toString(),
        "generator.lua");
    assertEquals(0, result.exitCode(), result.stderr());
    assertTrue(result.stderr().contains("target never stopped (bpf mode)"), result.stderr());

    FoldedStacks stacks = FoldedStacks.read(dir.resolve("out.folded"));
    List<FoldedStacks.Stack> inBody = stacks.stacks().stream()
        .filter(s -> s.has(f -> f.startsWith("body (generator.lua:")))
        .toList();
    long body = inBody.stream().mapToLong(FoldedStacks.Stack::count).sum();
    long whole = inBody.stream()
        .filter(s -> {
          int at = s.indexOf(f -> f.startsWith("body (generator.lua:"));
          List<String> f = s.frames();
          // Root first: main chunk, drive, the wrap function, the generator, body.
          return at >= 4 && f.get(at - 1).startsWith("function <generator.lua:9>")
              && f.get(at - 2).equals("coroutine.wrap_aux")
              && f.get(at - 3).startsWith("drive (generator.lua:")
              && f.get(at - 4).startsWith("main chunk (generator.lua:");
        })
        .mapToLong(FoldedStacks.Stack::count).sum();
    String context = build.name() + ": " + whole + " of " + body + " samples in body carry"
        + " their resumer; e.g. " + inBody.stream().filter(s -> !s.has(
            f -> f.startsWith("drive ("))).findFirst().map(Object::toString).orElse("none")
        + "\n" + result.stderr();
    System.out.println("LuaJitResumerTest " + context.lines().findFirst().orElse(""));
    assertTrue(body >= 60, "too few samples in body: " + context);
    assertTrue(whole >= (1 - RARE) * body, context);
  }
}
