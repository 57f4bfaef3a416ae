package dev.polystack.host.elf;

import static org.junit.jupiter.api.Assertions.*;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * Mutation fuzzing over real binaries. Every accessor must either succeed or throw
 * ElfParseException; any other throwable or a case exceeding its time limit fails with the seed
 * and case index needed to replay it ({@code -Delf.fuzz.seed=S -Delf.fuzz.only=I}).
 */
class ElfFuzzTest {
  private static final long SEED = Long.getLong("elf.fuzz.seed", 0x5eed_e1f0L);
  private static final long BUDGET_SECONDS = Long.getLong("elf.fuzz.seconds", 30);
  private static final int MAX_CASES = Integer.getInteger("elf.fuzz.max", 200_000);
  private static final int MIN_CASES = 5000;
  private static final long CASE_TIMEOUT_SECONDS = 10;
  private static final long[] INTERESTING = {
    0, 1, 2, 3, 4, 7, 8, 0x10, 0x18, 0x40, 0x7f, 0x80, 0xff, 0x100, 0xfff, 0x1000, 0x7fff, 0x8000, 0xffff, 0x10000,
    0x7fffffffL, 0x80000000L, 0xfffffffeL, 0xffffffffL, 0x100000000L, Long.MAX_VALUE, Long.MIN_VALUE, -1L, -2L, -8L
  };
  private static final String[] NAMES = {
    "lua_pcall", "luaJIT_setmode", "memcpy", "memcpy@GLIBC_2.2.5", "memcpy@@GLIBC_2.14", "clock_gettime",
    "__vdso_clock_gettime", "__vdso_clock_gettime@LINUX_2.6", "__vdso_time@@LINUX_2.6", "malloc", "", "@", "x@@"
  };

  /** A seed binary plus the (offset, width) of fields worth corrupting. */
  record Seed(String name, byte[] bytes, boolean image, long base, List<long[]> fields) {}

  record Outcome(boolean parsed, int failures) {}

  @Test
  void mutatedBinariesOnlyThrowElfParseException() throws Exception {
    List<Seed> seeds = new ArrayList<>();
    seeds.add(seedOf("luajit", Files.readAllBytes(TestBinaries.require(TestBinaries.LUAJIT)), false, 0));
    seeds.add(seedOf("libc", Files.readAllBytes(TestBinaries.require(TestBinaries.LIBC)), false, 0));
    VdsoImages.Image vdso = VdsoImages.read("self");
    seeds.add(seedOf("vdso", vdso.bytes(), true, vdso.base()));

    Integer only = Integer.getInteger("elf.fuzz.only");
    int threads = Math.max(1, Runtime.getRuntime().availableProcessors());
    ExecutorService pool = Executors.newFixedThreadPool(threads, r -> {
      Thread t = new Thread(r, "elf-fuzz");
      t.setDaemon(true); // a hung case must not keep the JVM alive after the failure is reported
      return t;
    });
    long start = System.nanoTime();
    long deadline = start + TimeUnit.SECONDS.toNanos(BUDGET_SECONDS);
    AtomicLong parsedOk = new AtomicLong();
    AtomicLong accessorFailures = new AtomicLong();
    int cases = 0;
    try {
      int first = only == null ? 0 : only;
      int last = only == null ? MAX_CASES : only + 1;
      for (int wave = first; wave < last && System.nanoTime() < deadline; wave += threads) {
        List<Future<Outcome>> futures = new ArrayList<>();
        for (int i = wave; i < Math.min(last, wave + threads); i++) {
          final int index = i;
          futures.add(pool.submit(() -> runCase(seeds, index)));
        }
        for (int k = 0; k < futures.size(); k++) {
          int index = wave + k;
          try {
            Outcome o = futures.get(k).get(CASE_TIMEOUT_SECONDS, TimeUnit.SECONDS);
            if (o.parsed()) {
              parsedOk.incrementAndGet();
            }
            accessorFailures.addAndGet(o.failures());
          } catch (TimeoutException e) {
            fail("case " + index + " (seed " + SEED + ") did not finish within " + CASE_TIMEOUT_SECONDS + " s");
          } catch (java.util.concurrent.ExecutionException e) {
            throw new AssertionError("case " + index + " (seed " + SEED + "): unexpected " + e.getCause(),
                e.getCause());
          }
          cases++;
        }
      }
    } finally {
      pool.shutdownNow();
    }
    double secs = (System.nanoTime() - start) / 1e9;
    System.out.printf("ElfFuzzTest: %d cases in %.1f s (seed %d); %d opened, %d accessor ElfParseExceptions%n",
        cases, secs, SEED, parsedOk.get(), accessorFailures.get());
    if (only == null) {
      assertTrue(cases >= MIN_CASES, "only " + cases + " cases ran within " + BUDGET_SECONDS + " s");
    }
  }

  private static Outcome runCase(List<Seed> seeds, int index) {
    Random rnd = new Random(SEED * 1_000_003L + index);
    // vDSO cases are cheapest; weight them so the run reaches many cases, keep big binaries frequent.
    int pick = rnd.nextInt(10);
    Seed seed = seeds.get(pick < 3 ? 0 : pick < 5 ? 1 : 2);
    byte[] data = mutate(seed, rnd);
    ElfSource src = seed.image() ? ElfSource.ofImage(data, seed.base(), seed.name() + "#" + index)
        : ElfSource.ofFileBytes(data, seed.name() + "#" + index);
    ElfFile elf;
    try {
      elf = ElfFile.open(src);
    } catch (ElfParseException e) {
      assertNotNull(e.getMessage());
      return new Outcome(false, 0);
    }
    return new Outcome(true, exercise(elf, rnd));
  }

  /** Calls every accessor; each one independently may fail with ElfParseException only. */
  private static int exercise(ElfFile elf, Random rnd) {
    int failures = 0;
    elf.header();
    elf.programHeaders();
    elf.sections();
    elf.executableRanges();
    elf.loadBias();
    elf.imageStartAddress();
    elf.virtualAddressToOffset(rnd.nextLong());
    elf.virtualAddressToOffset(rnd.nextInt(1 << 20));
    elf.offsetToVirtualAddress(rnd.nextInt(1 << 20));
    elf.section(".text");
    List<Step> steps = List.of(
        () -> elf.dynamicSection(),
        () -> {
          SymbolTable d = elf.dynamicSymbols();
          for (int i = 0; i < Math.min(20, d.size()); i++) {
            ElfSymbol s = d.symbols().get(rnd.nextInt(d.size()));
            elf.findDynamicSymbol(s.versionedName());
            s.versionedName();
          }
        },
        () -> elf.staticSymbols(),
        () -> {
          for (String n : NAMES) {
            elf.findDynamicSymbol(n);
          }
        },
        () -> {
          for (String n : NAMES) {
            elf.findDynamicSymbol(n, HashKind.SYSV);
          }
        },
        () -> {
          for (String n : NAMES) {
            elf.findDynamicSymbol(n, HashKind.GNU);
          }
        },
        () -> elf.findSymbol("memcpy"),
        () -> elf.dynamicSymbolCount(HashKind.SYSV),
        () -> elf.dynamicSymbolCount(HashKind.GNU),
        () -> elf.buildId(),
        () -> elf.debugLink(),
        () -> {
          Optional<FrameTable> eh = elf.ehFrame();
          if (eh.isPresent()) {
            eh.get().hasSearchTable();
            eh.get().searchTableSize();
            for (int i = 0; i < 8; i++) {
              eh.get().findFde(rnd.nextInt(1 << 21));
            }
          }
        },
        () -> {
          Optional<FrameTable> eh = elf.ehFrame();
          if (eh.isPresent()) {
            eh.get().cies();
            List<Fde> fdes = eh.get().fdes();
            for (int i = 0; i < Math.min(8, fdes.size()); i++) {
              Fde f = fdes.get(rnd.nextInt(fdes.size()));
              f.instructions();
              eh.get().findFde(f.pcBegin());
            }
          }
        },
        () -> {
          Optional<FrameTable> dbg = elf.debugFrame();
          if (dbg.isPresent()) {
            dbg.get().fdes();
            dbg.get().findFde(rnd.nextLong());
          }
        },
        () -> elf.findFde(rnd.nextInt(1 << 21)),
        () -> elf.findInRodata("LuaJIT".getBytes(StandardCharsets.US_ASCII)),
        () -> elf.findInRodata(new byte[] {(byte) rnd.nextInt(), (byte) rnd.nextInt()}),
        () -> {
          Symbolizer s = elf.symbolizer();
          for (int i = 0; i < 16; i++) {
            s.lookup(rnd.nextInt(1 << 21));
          }
          s.lookup(-1L);
          List<ElfSymbol> all = s.symbols();
          for (int i = 0; i < Math.min(16, all.size()); i++) {
            ElfSymbol x = all.get(rnd.nextInt(all.size()));
            elf.symbolize(x.value() + (x.size() == 0 ? 0 : rnd.nextLong() % x.size()));
          }
        });
    for (Step step : steps) {
      try {
        step.run();
      } catch (ElfParseException e) {
        assertNotNull(e.getMessage());
        failures++;
      }
    }
    return failures;
  }

  interface Step {
    void run() throws ElfParseException;
  }

  // ---- mutation -------------------------------------------------------------------------------

  private static byte[] mutate(Seed seed, Random rnd) {
    byte[] d = seed.bytes().clone();
    int rounds = 1 + rnd.nextInt(3);
    for (int r = 0; r < rounds && d.length > 0; r++) {
      int kind = rnd.nextInt(10);
      if (kind < 6 && !seed.fields().isEmpty()) {
        long[] f = seed.fields().get(rnd.nextInt(seed.fields().size()));
        write(d, (int) f[0], (int) f[1], interesting(rnd, d.length));
      } else if (kind < 8) {
        for (int i = 1 + rnd.nextInt(16); i > 0; i--) {
          d[rnd.nextInt(d.length)] ^= (byte) (1 << rnd.nextInt(8));
        }
      } else if (kind == 8) {
        // Truncations near the start hit headers; elsewhere they cut tables and sections short.
        int len = rnd.nextBoolean() ? rnd.nextInt(Math.min(d.length, 4096)) : rnd.nextInt(d.length);
        byte[] t = new byte[len];
        System.arraycopy(d, 0, t, 0, len);
        d = t;
      } else {
        int at = rnd.nextInt(Math.max(1, d.length - 64));
        for (int i = 0; i < 8 && at + i < d.length; i++) {
          d[at + i] = (byte) rnd.nextInt();
        }
      }
    }
    return d;
  }

  private static long interesting(Random rnd, int size) {
    switch (rnd.nextInt(5)) {
      case 0:
        return size + rnd.nextInt(64) - 32L;
      case 1:
        return rnd.nextLong();
      case 2:
        return rnd.nextInt(Math.max(1, size));
      default:
        return INTERESTING[rnd.nextInt(INTERESTING.length)];
    }
  }

  private static void write(byte[] d, int off, int width, long value) {
    for (int i = 0; i < width && off + i < d.length; i++) {
      if (off + i >= 0) {
        d[off + i] = (byte) (value >>> (8 * i));
      }
    }
  }

  /** Collects the offsets of header, table and record fields from a clean parse of the seed. */
  private static Seed seedOf(String name, byte[] bytes, boolean image, long base) throws Exception {
    ElfFile elf = ElfFile.open(image ? ElfSource.ofImage(bytes, base, name) : ElfSource.ofFileBytes(bytes, name));
    List<long[]> f = new ArrayList<>();
    long[][] ehdr = {{24, 8}, {32, 8}, {40, 8}, {48, 4}, {52, 2}, {54, 2}, {56, 2}, {58, 2}, {60, 2}, {62, 2}};
    for (long[] x : ehdr) {
      f.add(x);
    }
    ElfHeader h = elf.header();
    for (int i = 0; i < h.programHeaderCount(); i++) {
      long o = h.programHeaderOffset() + (long) i * h.programHeaderEntrySize();
      for (long[] x : new long[][] {{0, 4}, {4, 4}, {8, 8}, {16, 8}, {32, 8}, {40, 8}}) {
        f.add(new long[] {o + x[0], x[1]});
      }
    }
    for (SectionHeader sh : elf.sections()) {
      long o = h.sectionHeaderOffset() + (long) sh.index() * h.sectionHeaderEntrySize();
      for (long[] x : new long[][] {{0, 4}, {4, 4}, {16, 8}, {24, 8}, {32, 8}, {40, 4}, {44, 4}, {56, 8}}) {
        f.add(new long[] {o + x[0], x[1]});
      }
      if (!sh.hasData()) {
        continue;
      }
      long so = sh.offset();
      switch (sh.type()) {
        case SectionHeader.SHT_HASH -> {
          f.add(new long[] {so, 4}); // nbucket
          f.add(new long[] {so + 4, 4}); // nchain
          for (int i = 0; i < 64 && 8 + 4L * i < sh.size(); i++) {
            f.add(new long[] {so + 8 + 4L * i * 7 % sh.size(), 4}); // buckets and chains (loops)
          }
        }
        case SectionHeader.SHT_GNU_HASH -> {
          for (int i = 0; i < 4; i++) {
            f.add(new long[] {so + 4L * i, 4}); // nbuckets, symoffset, bloom_size, bloom_shift
          }
          for (long p = 16; p < sh.size(); p += Math.max(4, sh.size() / 64)) {
            f.add(new long[] {p + so & ~3L, 4}); // bloom, buckets, chain end bits
          }
        }
        case SectionHeader.SHT_GNU_VERDEF, SectionHeader.SHT_GNU_VERNEED -> {
          for (long p = 0; p + 4 <= sh.size() && p < 512; p += 2) {
            f.add(new long[] {so + p, 4});
          }
        }
        case SectionHeader.SHT_DYNAMIC -> {
          for (long p = 0; p + 16 <= sh.size(); p += 16) {
            f.add(new long[] {so + p, 8});
            f.add(new long[] {so + p + 8, 8});
          }
        }
        default -> {
        }
      }
      if (sh.name().equals(".eh_frame_hdr")) {
        for (long p = 0; p < 12; p++) {
          f.add(new long[] {so + p, 4});
        }
        for (int i = 0; i < 32; i++) {
          f.add(new long[] {so + 12 + (8L * i * 13) % Math.max(8, sh.size() - 12), 4});
        }
      }
      if (sh.name().equals(".gnu_debuglink")) {
        f.add(new long[] {so + sh.size() - 4, 4});
        f.add(new long[] {so + sh.size() / 2, 8});
      }
    }
    Optional<FrameTable> eh = elf.ehFrame();
    if (eh.isPresent()) {
      long ehOff = elf.section(".eh_frame").map(SectionHeader::offset).orElse(-1L);
      if (ehOff >= 0) {
        List<Fde> fdes = eh.get().fdes();
        for (Cie c : eh.get().cies()) {
          for (long p = 0; p < 16; p += 1) {
            f.add(new long[] {ehOff + c.offset() + p, p < 4 ? 4 : 1}); // length, id, version, augmentation
          }
        }
        for (int i = 0; i < fdes.size(); i += Math.max(1, fdes.size() / 200)) {
          long o = ehOff + fdes.get(i).offset();
          f.add(new long[] {o, 4}); // length
          f.add(new long[] {o + 4, 4}); // CIE pointer
          f.add(new long[] {o + 8, 4}); // pc_begin
          f.add(new long[] {o + 12, 4}); // pc_range
        }
      }
    }
    ByteBuffer b = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
    assertEquals(0x464c457f, b.getInt(0));
    return new Seed(name, bytes, image, base, f);
  }
}
