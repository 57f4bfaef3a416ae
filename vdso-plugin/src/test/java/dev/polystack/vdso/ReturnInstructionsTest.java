package dev.polystack.vdso;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The length decoder against objdump (an oracle nobody here wrote) on this machine's live vDSO:
 * every instruction boundary of every exported function, and the ret instructions among them.
 */
class ReturnInstructionsTest {
  @TempDir Path tmp;

  private static final Pattern SYMBOL = Pattern.compile(
      "^([0-9a-f]+) g +DF \\.text\\s+([0-9a-f]+)\\s+\\S+\\s+(__vdso_\\w+)$");
  private static final Pattern INSN = Pattern.compile("^ +([0-9a-f]+):\\t(.*)$");

  @Test
  void boundariesAndRetsMatchObjdumpOnTheLiveVdso() throws Exception {
    Assumptions.assumeTrue(Files.isExecutable(Path.of("/usr/bin/objdump")), "no objdump");
    byte[] image = LiveVdso.image();
    Path so = tmp.resolve("vdso.so");
    Files.write(so, image);
    List<String> disasm = run("/usr/bin/objdump", "-d", so.toString());
    int functions = 0;
    for (String line : run("/usr/bin/objdump", "-T", so.toString())) {
      Matcher m = SYMBOL.matcher(line.strip());
      if (!m.matches()) {
        continue;
      }
      long start = Long.parseLong(m.group(1), 16);
      long size = Long.parseLong(m.group(2), 16);
      List<Long> starts = new ArrayList<>();
      List<Long> rets = new ArrayList<>();
      for (String d : disasm) {
        Matcher i = INSN.matcher(d);
        if (i.matches()) {
          long a = Long.parseLong(i.group(1), 16);
          // objdump continues a long instruction's bytes on a line of its own, without text
          boolean text = i.group(2).split("\t").length > 1;
          if (a >= start && a < start + size && text) {
            starts.add(a);
            if (i.group(2).matches(".*\\t(rep )?ret[q]?\\s*$")) {
              rets.add(a);
            }
          }
        }
      }
      byte[] code = Arrays.copyOfRange(image, (int) start, (int) (start + size));
      List<Long> decoded = new ArrayList<>();
      for (int at = 0; at < code.length; ) {
        ReturnInstructions.Insn insn = ReturnInstructions.decode(code, at);
        assertNotNull(insn, m.group(3) + String.format("+0x%x undecoded", at));
        decoded.add(start + at);
        at += insn.length();
      }
      assertEquals(starts, decoded, m.group(3) + ": instruction boundaries");
      ReturnInstructions.Result r = ReturnInstructions.find(code, start);
      assertTrue(r.ok(), m.group(3) + ": " + r.refusal());
      assertEquals(rets, r.returns(), m.group(3) + ": ret instructions");
      functions++;
    }
    assertTrue(functions >= 4, "the vDSO's exports: " + functions);
  }

  @Test
  void aTailJumpOrAnUnknownOpcodeRefuses() {
    // jmp rel32 out of a 5-byte function (a tail call): it returns through another's ret
    ReturnInstructions.Result tail =
        ReturnInstructions.find(new byte[] {(byte) 0xe9, 0x10, 0, 0, 0}, 0x1000);
    assertFalse(tail.ok());
    assertTrue(tail.refusal().contains("tail call"), tail.refusal());
    // 0x62 is EVEX in 64-bit mode, not decoded
    assertFalse(ReturnInstructions.find(new byte[] {0x62, 0, 0, 0, (byte) 0xc3}, 0).ok());
    // push rbp; mov rbp,rsp; pop rbp; ret
    ReturnInstructions.Result ok = ReturnInstructions.find(
        new byte[] {0x55, 0x48, (byte) 0x89, (byte) 0xe5, 0x5d, (byte) 0xc3}, 0x2000);
    assertEquals(List.of(0x2005L), ok.returns());
  }

  private static List<String> run(String... command) throws IOException, InterruptedException {
    Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
    List<String> lines = new String(p.getInputStream().readAllBytes()).lines().toList();
    assertEquals(0, p.waitFor(), String.join("\n", lines));
    return lines;
  }
}
