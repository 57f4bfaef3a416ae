package dev.polystack.vdso;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.polystack.plugin.api.CodeRange;
import dev.polystack.plugin.api.ModuleImage;
import dev.polystack.plugin.api.ModuleSymbol;
import dev.polystack.plugin.api.ProbeExit;
import dev.polystack.plugin.api.ProbePlan;
import dev.polystack.plugin.api.ProbeRequest;
import dev.polystack.plugin.api.Register;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/**
 * Planning for a backend that breaks on return instructions (the BPF one): a function fits
 * when its entry and every ret fit the slots, what does not fit or cannot be decoded is named,
 * and the plan carries the rets and the output copies as data.
 */
class PlannerReturnsTest {
  // Three functions in a 0x100-byte text: f1 has two rets (3 slots), f2 one (2 slots), f3 jumps
  // out of itself (a tail call: refused).
  private static final byte[] CODE = new byte[0x100];

  static {
    // clock_gettime at 0x10: test rdi,rdi; je +1; ret; ret
    put(0x10, 0x48, 0x85, 0xff, 0x74, 0x01, 0xc3, 0xc3);
    // time at 0x20: xor eax,eax; ret
    put(0x20, 0x31, 0xc0, 0xc3);
    // getcpu at 0x30: jmp rel32 far away
    put(0x30, 0xe9, 0x00, 0x10, 0x00, 0x00);
  }

  private static void put(int at, int... bytes) {
    for (int i = 0; i < bytes.length; i++) {
      CODE[at + i] = (byte) bytes[i];
    }
  }

  private static final ModuleImage IMAGE = new ModuleImage() {
    @Override
    public String name() {
      return "[vdso]";
    }

    @Override
    public Optional<String> buildId() {
      return Optional.empty();
    }

    @Override
    public Optional<ModuleSymbol> symbol(String name) {
      return dynamicSymbols().stream().filter(s -> s.name().equals(name)).findFirst();
    }

    @Override
    public List<ModuleSymbol> dynamicSymbols() {
      return List.of(sym("__vdso_clock_gettime", 0x10, 7), sym("__vdso_time", 0x20, 3),
          sym("__vdso_getcpu", 0x30, 5));
    }

    private ModuleSymbol sym(String name, long at, long size) {
      return new ModuleSymbol(name, "LINUX_2.6", true, at, size, true, true);
    }

    @Override
    public boolean hasStaticSymbols() {
      return false;
    }

    @Override
    public List<CodeRange> unwindRanges() {
      return List.of();
    }

    @Override
    public List<CodeRange> executableRanges() {
      return List.of(new CodeRange(0, CODE.length, ".text"));
    }

    @Override
    public List<Long> findInReadOnlyData(byte[] needle, int limit) {
      return List.of();
    }

    @Override
    public int read(long address, byte[] dst, int offset, int length) {
      int n = (int) Math.min(length, CODE.length - address);
      System.arraycopy(CODE, (int) address, dst, offset, n);
      return n;
    }
  };

  @Test
  void fitsEntryAndEveryRetAndNamesWhatIsLeftOut() throws Exception {
    ProbePlan plan = new VdsoPlugin().plan(IMAGE, new ProbeRequest(List.of(), 4, true));
    assertEquals(List.of("clock_gettime"), plan.sites().stream().map(s -> s.function()).toList());
    assertEquals(List.of(new ProbeExit(0x10, List.of(0x15L, 0x16L),
        List.of(new ProbeExit.OutputCopy(Register.RSI, 16)))), plan.exits());
    assertEquals(2, plan.omitted().size(), plan.omitted().toString());
    assertTrue(plan.omitted().get(0).startsWith("time: needs 2 hardware breakpoint slots"),
        plan.omitted().get(0));
    assertTrue(plan.omitted().get(1).contains("tail call"), plan.omitted().get(1));
  }

  @Test
  void twoSmallFunctionsShareTheSlots() throws Exception {
    ProbePlan plan = new VdsoPlugin().plan(IMAGE, new ProbeRequest(List.of("time"), 4, true));
    assertEquals(List.of(new ProbeExit(0x20, List.of(0x22L),
        List.of(new ProbeExit.OutputCopy(Register.RDI, 8)))), plan.exits());
    assertEquals(List.of(), plan.omitted());
  }

  @Test
  void withoutReturnInstructionsThePlanHasNoExits() throws Exception {
    ProbePlan plan = new VdsoPlugin().plan(IMAGE, new ProbeRequest(List.of(), 4));
    assertEquals(List.of(), plan.exits());
    assertEquals(2, plan.sites().size());
  }

  @Test
  void withLentReturnSlotsEveryFunctionNeedsOnlyItsEntry() throws Exception {
    ProbePlan plan = new VdsoPlugin().plan(IMAGE,
        new ProbeRequest(List.of("clock_gettime", "time", "getcpu"), 4, false, true));
    assertEquals(List.of("clock_gettime", "time", "getcpu"),
        plan.sites().stream().map(s -> s.function()).toList());
    assertEquals(List.of(), plan.omitted());
    assertEquals(List.of(), plan.exits());
  }
}
