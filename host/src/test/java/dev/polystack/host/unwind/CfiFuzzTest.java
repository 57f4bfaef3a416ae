package dev.polystack.host.unwind;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.polystack.host.elf.Cie;
import dev.polystack.host.elf.ElfFile;
import dev.polystack.host.elf.Fde;
import dev.polystack.plugin.api.MemoryReadException;
import dev.polystack.plugin.api.Register;
import dev.polystack.plugin.api.Registers;
import dev.polystack.plugin.api.RemoteMemory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Mutation fuzzing of DWARF CFI evaluation: real FDEs from libc and luajit with their DW_CFA
 * instruction bytes (and sometimes their CIE's initial instructions and factors) mutated, run
 * by {@link CfiInterpreter#rowFor} at a PC in (or near) the FDE and, when a row comes out, fed
 * through {@link NativeUnwinder} over random register states and a byte-array-backed "stack"
 * of random words with pointers into itself. Every case must end in a row or a
 * {@link CfiException}, and every walk in an UnwindResult, within a bounded time; anything else
 * fails with the seed and case index to replay it ({@code -Dcfi.fuzz.seed=S -Dcfi.fuzz.only=I}).
 *
 * <p>Cases: {@code -Dcfi.fuzz.cases} (default 100000, a few seconds; the figures in
 * docs/reliability.md come from {@code -Dcfi.fuzz.cases=1000000}), within
 * {@code -Dcfi.fuzz.seconds} (default 60).
 */
class CfiFuzzTest {
  private static final long SEED = Long.getLong("cfi.fuzz.seed", 0xcf1_f422L);
  private static final int CASES = Integer.getInteger("cfi.fuzz.cases", 100_000);
  private static final long BUDGET_SECONDS = Long.getLong("cfi.fuzz.seconds", 60);
  private static final int CHUNK = 500;
  /** A chunk of CHUNK cases that takes longer than this has a case that does not terminate. */
  private static final long CHUNK_TIMEOUT_SECONDS = 60;
  private static final long STACK_BASE = 0x7ffc_0000_0000L;
  private static final int STACK_BYTES = 64 << 10;
  /** DW_CFA opcodes worth inserting: every primary and extended form, and the GNU ones. */
  private static final int[] OPCODES = {
    0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e,
    0x0f, 0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x2e, 0x2f, 0x40, 0x41, 0x7f, 0x80, 0x86,
    0x90, 0xbf, 0xc0, 0xc6, 0xff, 0x1c, 0x3f,
  };

  private record Seed(String module, Fde fde) {}

  private static List<Seed> seeds;
  private static long codeLow;
  private static long codeHigh;

  @Test
  void mutatedCfiOnlyEndsInARowOrCfiException() throws Exception {
    seeds = new ArrayList<>();
    for (Path p : List.of(Path.of("/lib/x86_64-linux-gnu/libc.so.6"), Path.of("/usr/bin/luajit"))) {
      assertTrue(Files.isRegularFile(p), p + " is missing (install libc6 and luajit)");
      ElfFile elf = ElfFile.open(p);
      for (Fde fde : elf.ehFrame().orElseThrow().fdes()) {
        seeds.add(new Seed(p.getFileName().toString(), fde));
      }
    }
    codeLow = seeds.stream().mapToLong(s -> s.fde().pcBegin()).min().orElseThrow();
    codeHigh = seeds.stream().mapToLong(s -> s.fde().pcEnd()).max().orElseThrow();
    assertTrue(seeds.size() > 1000, "only " + seeds.size() + " FDEs");

    Integer only = Integer.getInteger("cfi.fuzz.only");
    int first = only == null ? 0 : only;
    int last = only == null ? CASES : only + 1;
    int threads = Math.max(1, Runtime.getRuntime().availableProcessors());
    ExecutorService pool = Executors.newFixedThreadPool(threads, r -> {
      Thread t = new Thread(r, "cfi-fuzz");
      t.setDaemon(true); // a hung case must not keep the JVM alive after the failure
      return t;
    });
    long start = System.nanoTime();
    long deadline = start + TimeUnit.SECONDS.toNanos(BUDGET_SECONDS);
    Map<String, Long> outcomes = new TreeMap<>();
    int cases = 0;
    long maxCaseNanos = 0;
    try {
      for (int wave = first; wave < last && System.nanoTime() < deadline;
          wave += CHUNK * threads) {
        List<Future<Tally>> futures = new ArrayList<>();
        for (int c = wave; c < Math.min(last, wave + CHUNK * threads); c += CHUNK) {
          int from = c;
          int to = Math.min(last, c + CHUNK);
          futures.add(pool.submit(() -> runCases(from, to)));
        }
        for (Future<Tally> f : futures) {
          Tally t;
          try {
            t = f.get(CHUNK_TIMEOUT_SECONDS, TimeUnit.SECONDS);
          } catch (java.util.concurrent.TimeoutException e) {
            throw new AssertionError("a chunk of cases from " + wave + " did not finish in "
                + CHUNK_TIMEOUT_SECONDS + " s (seed 0x" + Long.toHexString(SEED) + ")");
          }
          t.outcomes.forEach((k, v) -> outcomes.merge(k, v, Long::sum));
          cases += t.cases;
          maxCaseNanos = Math.max(maxCaseNanos, t.maxNanos);
        }
      }
    } finally {
      pool.shutdownNow();
    }
    double seconds = (System.nanoTime() - start) / 1e9;
    System.out.printf("[reliability] cfi-fuzz: cases=%d seconds=%.1f max_case_ms=%.1f fdes=%d"
        + " seed=0x%x outcomes=%s%n", cases, seconds, maxCaseNanos / 1e6, seeds.size(), SEED,
        outcomes);
    assertEquals(0L, outcomes.getOrDefault("FAILED", 0L), "see the failures above");
    assertTrue(cases >= Math.min(CASES, 2000), "only " + cases + " cases in the time budget");
    assertTrue(outcomes.getOrDefault("row", 0L) > cases / 20, "too few rows: " + outcomes);
  }

  /**
   * Regression: DW_CFA_offset and DW_CFA_restore in their compact forms (0x80|reg, 0xc0|reg)
   * for a register the unwinder does not track (17 = xmm0; ms_abi code saves xmm6-15 so) used to
   * throw ArrayIndexOutOfBoundsException.
   */
  @Test
  void compactOffsetAndRestoreOfAVectorRegisterAreIgnored() throws Exception {
    Fde real = ElfFile.open(Path.of("/lib/x86_64-linux-gnu/libc.so.6")).ehFrame().orElseThrow()
        .fdes().get(0);
    byte[] insns = {0x0c, 0x07, 0x10, (byte) 0x91, 0x02, 0x41, (byte) 0xd1, 0x41, (byte) 0xbf,
        0x01};
    Fde fde = new Fde(real.offset(), real.cie(), 0x1000, 0x100, new byte[0], false, 0, insns);
    for (long pc : new long[] {0x1000, 0x1001, 0x1002, 0x10ff}) {
      UnwindRow row = CfiInterpreter.rowFor(fde, pc);
      assertTrue(row != null);
    }
  }

  private static final class Tally {
    final Map<String, Long> outcomes = new TreeMap<>();
    int cases;
    long maxNanos;
  }

  private static Tally runCases(int from, int to) {
    Tally tally = new Tally();
    for (int i = from; i < to; i++) {
      long t0 = System.nanoTime();
      String outcome;
      try {
        outcome = runCase(i);
      } catch (Throwable t) {
        outcome = "FAILED";
        System.out.println("[cfi-fuzz] case " + i + " (seed 0x" + Long.toHexString(SEED)
            + ") threw " + t);
        t.printStackTrace(System.out);
      }
      tally.outcomes.merge(outcome, 1L, Long::sum);
      tally.cases++;
      tally.maxNanos = Math.max(tally.maxNanos, System.nanoTime() - t0);
    }
    return tally;
  }

  /** One case: "row", "walk:REASON" (a row that went on through the unwinder) or "cfi:REASON". */
  private static String runCase(int index) throws Exception {
    Random r = new Random(SEED * 1_000_003L + index);
    Seed seed = seeds.get(r.nextInt(seeds.size()));
    Fde fde = mutate(seed.fde(), r);
    long pc = switch (r.nextInt(8)) {
      case 0 -> fde.pcBegin() - 1 - r.nextInt(16);
      case 1 -> fde.pcEnd() + r.nextInt(16);
      case 2 -> r.nextLong();
      default -> fde.pcBegin() + (fde.pcRange() <= 0 ? 0 : Math.floorMod(r.nextLong(),
          Math.max(1, fde.pcRange())));
    };
    UnwindRow row;
    try {
      row = CfiInterpreter.rowFor(fde, pc);
    } catch (CfiException e) {
      return "cfi:" + e.error().reason();
    }
    if (r.nextInt(4) != 0) {
      return "row";
    }
    // Walk: every PC in the code range gets a row from a mutated FDE chosen by the PC, so
    // mutated rows meet each other along the walk.
    byte[] stack = new byte[STACK_BYTES];
    r.nextBytes(stack);
    for (int k = 0; k < 512; k++) {
      long word = switch (r.nextInt(3)) {
        case 0 -> STACK_BASE + r.nextInt(STACK_BYTES);
        case 1 -> codeLow + Math.floorMod(r.nextLong(), Math.max(1, codeHigh - codeLow));
        default -> 0;
      };
      putLong(stack, r.nextInt(STACK_BYTES / 8) * 8, word);
    }
    RemoteMemory memory = (address, dst, off, len) -> {
      long rel = address - STACK_BASE;
      if (rel < 0 || rel >= STACK_BYTES) {
        throw new MemoryReadException(address, len, "unmapped");
      }
      int n = (int) Math.min(len, STACK_BYTES - rel);
      System.arraycopy(stack, (int) rel, dst, off, n);
      return n;
    };
    long walkSeed = r.nextLong();
    UnwindModule module = new UnwindModule() {
      @Override
      public long bias() {
        return 0;
      }

      @Override
      public String name() {
        return seed.module() + " (mutated)";
      }

      @Override
      public UnwindRow row(long linkTimePc) throws CfiException {
        Random m = new Random(walkSeed ^ linkTimePc);
        Fde base = seeds.get(m.nextInt(seeds.size())).fde();
        return CfiInterpreter.rowFor(mutate(base, m), base.pcBegin()
            + Math.floorMod(linkTimePc, Math.max(1, base.pcRange())));
      }
    };
    long[] regs = new long[Register.values().length];
    for (int k = 0; k < regs.length; k++) {
      regs[k] = switch (r.nextInt(4)) {
        case 0 -> STACK_BASE + r.nextInt(STACK_BYTES);
        case 1 -> r.nextLong();
        case 2 -> 0;
        default -> r.nextInt(256);
      };
    }
    regs[Register.RIP.ordinal()] = pc;
    regs[Register.RSP.ordinal()] = STACK_BASE + r.nextInt(STACK_BYTES);
    UnwindResult result = new NativeUnwinder(128).unwind(Registers.of(regs), memory,
        p -> r.nextInt(8) == 0 ? null : module);
    if (result.frames().isEmpty() || result.frames().size() > 128) {
      throw new AssertionError("walk of " + result.frames().size() + " frames");
    }
    return "walk:" + (row == null ? "?" : String.valueOf(result.errorReason()));
  }

  /** A copy of {@code fde} with its instruction bytes (and maybe its CIE) mutated. */
  static Fde mutate(Fde fde, Random r) {
    Cie cie = fde.cie();
    byte[] insns = mutateBytes(fde.instructions(), r);
    if (r.nextInt(5) == 0) {
      cie = new Cie(cie.offset(), cie.version(), cie.augmentation(), cie.addressSize(),
          cie.segmentSize(),
          r.nextInt(4) == 0 ? interesting(r) : cie.codeAlignmentFactor(),
          r.nextInt(4) == 0 ? interesting(r) : cie.dataAlignmentFactor(),
          r.nextInt(8) == 0 ? interesting(r) : cie.returnAddressRegister(),
          cie.personalityEncoding(), cie.personality(), cie.lsdaEncoding(), cie.fdeEncoding(),
          r.nextInt(8) == 0 ? !cie.signalFrame() : cie.signalFrame(),
          mutateBytes(cie.initialInstructions(), r));
    }
    long range = r.nextInt(10) == 0 ? interesting(r) : fde.pcRange();
    return new Fde(fde.offset(), cie, fde.pcBegin(), range, fde.augmentationData(),
        fde.hasLsda(), fde.lsda(), insns);
  }

  private static byte[] mutateBytes(byte[] in, Random r) {
    List<Byte> b = new ArrayList<>(in.length + 16);
    for (byte x : in) {
      b.add(x);
    }
    int edits = 1 + r.nextInt(4);
    for (int e = 0; e < edits; e++) {
      int pos = b.isEmpty() ? 0 : r.nextInt(b.size() + 1);
      switch (r.nextInt(7)) {
        case 0 -> { // flip a bit
          if (!b.isEmpty()) {
            int p = Math.min(pos, b.size() - 1);
            b.set(p, (byte) (b.get(p) ^ (1 << r.nextInt(8))));
          }
        }
        case 1 -> { // a random byte
          if (!b.isEmpty()) {
            b.set(Math.min(pos, b.size() - 1), (byte) r.nextInt(256));
          }
        }
        case 2 -> b.add(pos, (byte) OPCODES[r.nextInt(OPCODES.length)]);
        case 3 -> { // an opcode followed by a long or endless LEB128
          b.add(pos, (byte) OPCODES[r.nextInt(OPCODES.length)]);
          int n = 1 + r.nextInt(12);
          for (int k = 0; k < n; k++) {
            b.add(pos + 1, (byte) (0x80 | r.nextInt(256)));
          }
        }
        case 4 -> { // truncate
          if (!b.isEmpty()) {
            b.subList(Math.min(pos, b.size()), b.size()).clear();
          }
        }
        case 5 -> { // remember_state storms / restore_state without remember
          int n = 1 + r.nextInt(80);
          for (int k = 0; k < n; k++) {
            b.add(pos, (byte) (r.nextBoolean() ? 0x0a : 0x0b));
          }
        }
        default -> { // duplicate a slice
          if (!b.isEmpty()) {
            int from = r.nextInt(b.size());
            int to = Math.min(b.size(), from + 1 + r.nextInt(32));
            b.addAll(Math.min(pos, b.size()), new ArrayList<>(b.subList(from, to)));
          }
        }
      }
    }
    byte[] out = new byte[b.size()];
    for (int i = 0; i < out.length; i++) {
      out[i] = b.get(i);
    }
    return out;
  }

  private static long interesting(Random r) {
    long[] values = {0, 1, -1, -8, 8, 16, 17, 63, 64, 127, 128, 0x7fffffffL, -0x80000000L,
        Long.MAX_VALUE, Long.MIN_VALUE, 1L << 40};
    return values[r.nextInt(values.length)];
  }

  private static void putLong(byte[] b, int at, long v) {
    for (int i = 0; i < 8; i++) {
      b[at + i] = (byte) (v >>> (8 * i));
    }
  }
}
