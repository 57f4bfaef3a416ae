package dev.polystack.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A stripped C binary: no symbol names its functions, so each is called
 * {@code MODULE!fn@0xSTART} with its start from the .eh_frame FDE, one frame per function
 * rather than one per instruction, and the flame graph stacks up. The oracle is nm(1) on the
 * same binary before stripping: each function's FDE starts at its symbol's address.
 */
class StrippedBinaryTest {
  @TempDir Path dir;

  @Test
  void framesOfAStrippedBinaryAreItsFunctionsNamedByTheirStart() throws Exception {
    Path stripped = dir.resolve("two_threads_stripped");
    Files.copy(Workloads.binary("two_threads"), stripped);
    Map<String, String> start = functionStarts(stripped);
    var strip = Tools.run(60, null, List.of("strip", stripped.toString()));
    assertEquals(0, strip.exitCode(), strip.stderr());
    assertTrue(!Tools.run(60, null, List.of("nm", stripped.toString())).stderr().isEmpty(),
        "strip left symbols in " + stripped);

    Path out = dir.resolve("stripped.folded");
    var result = Distribution.run("record", "--format", "folded", "-o", out.toString(), "--",
        stripped.toString(), "1");
    assertEquals(0, result.exitCode(), result.stderr());

    String name = stripped.getFileName().toString();
    String chain = name + "!fn@0x" + start.get("top_a") + ";" + name + "!fn@0x"
        + start.get("mid_a") + ";" + name + "!fn@0x" + start.get("leaf_a");
    Map<String, Long> stacks = Tools.folded(out);
    long inLeaf = 0;
    long whole = 0;
    for (var e : stacks.entrySet()) {
      if (e.getKey().endsWith(name + "!fn@0x" + start.get("leaf_a"))) {
        inLeaf += e.getValue();
        if (e.getKey().contains(chain)) {
          whole += e.getValue();
        }
      }
      assertTrue(!e.getKey().contains(name + "+0x"), "a frame named by its offset: "
          + e.getKey());
    }
    assertTrue(inLeaf > 0, "no sample in leaf_a's function: " + stacks.keySet());
    // leaf_a is one frame under one chain, so its samples stack up. Not all of them: a stack
    // can be cut short (bpf mode's copy limit), ~2% in RecordLaunchTest; half is far below.
    assertTrue(whole * 2 >= inLeaf, whole + " of " + inLeaf + " leaf_a samples under "
        + chain + ": " + stacks.keySet());
  }

  /** Function name to start address (hex, no leading zeros) from nm on the unstripped binary. */
  private static Map<String, String> functionStarts(Path binary) throws Exception {
    var nm = Tools.run(60, null, List.of("nm", binary.toString()));
    assertEquals(0, nm.exitCode(), nm.stderr());
    Map<String, String> out = new HashMap<>();
    for (String line : nm.stdout().lines().toList()) {
      String[] f = line.trim().split("\\s+");
      if (f.length == 3 && (f[1].equals("T") || f[1].equals("t"))) {
        out.put(f[2], Long.toHexString(Long.parseUnsignedLong(f[0], 16)));
      }
    }
    for (String fn : List.of("top_a", "mid_a", "leaf_a")) {
      assertTrue(out.containsKey(fn), "nm shows no " + fn + ": " + nm.stdout());
    }
    return out;
  }
}
