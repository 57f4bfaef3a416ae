package dev.polystack.vdso;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.polystack.plugin.api.ArgumentDecoder;
import dev.polystack.plugin.api.ArgumentRegisters;
import dev.polystack.plugin.api.DecodedArgument;
import dev.polystack.plugin.api.DecodedReturn;
import dev.polystack.plugin.api.ModuleImage;
import dev.polystack.plugin.api.ModuleSymbol;
import dev.polystack.plugin.api.kit.Conformance;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * The plug-in's argument decoders for host-placed sites, asked as the host asks: with the live
 * vDSO image of this JVM and the machine's C library, read by the author kit.
 */
class ArgumentDecodersTest {
  private static final Path LIBC = Path.of("/usr/lib/x86_64-linux-gnu/libc.so.6");
  private final VdsoPlugin plugin = new VdsoPlugin();

  private static String args(ArgumentDecoder d, long... registers) {
    long[] r = new long[ArgumentRegisters.COUNT];
    System.arraycopy(registers, 0, r, 0, registers.length);
    return d.arguments(ArgumentRegisters.of(r)).stream()
        .map(a -> a.name() + "=" + a.value()).collect(Collectors.joining(", "));
  }

  private ArgumentDecoder decoder(ModuleImage image, String name) throws Exception {
    ModuleSymbol symbol = image.symbol(name).orElseThrow(() -> new AssertionError(
        "no " + name + " in " + image.name()));
    return plugin.argumentDecoder(image, symbol).orElseThrow(() -> new AssertionError(
        "no decoder for " + name + " in " + image.name()));
  }

  @Test
  void decodesTheVdsosClockFunctionsUnderEitherName() throws Exception {
    ModuleImage vdso = Conformance.image("[vdso]", LiveVdso.image());
    for (String name : List.of("clock_gettime", "__vdso_clock_gettime")) {
      ArgumentDecoder d = decoder(vdso, name);
      assertEquals("clockid=CLOCK_MONOTONIC, tp=0x7ffd2c1e9a40", args(d, 1, 0x7ffd2c1e9a40L));
      assertEquals("clockid=CLOCK_REALTIME, tp=NULL", args(d, 0, 0));
      assertEquals(DecodedReturn.success("0"), d.returnValue(0));
      // The vDSO returns its syscall fallback's -errno, as an int: the upper half is noise.
      assertEquals(DecodedReturn.failure("-EINVAL", "EINVAL"),
          d.returnValue(0xdead_beef_ffff_ffeaL));
      assertEquals(DecodedReturn.failure("-EFAULT", "EFAULT"), d.returnValue(-14));
    }
    assertEquals("clockid=CLOCK_BOOTTIME, res=0x1000", args(decoder(vdso, "clock_getres"), 7,
        0x1000));
    assertEquals("tv=0x7ffd0010, tz=NULL", args(decoder(vdso, "gettimeofday"), 0x7ffd0010L));
    ArgumentDecoder time = decoder(vdso, "time");
    assertEquals("tloc=NULL", args(time, 0));
    assertEquals(DecodedReturn.success("1765086300"), time.returnValue(1765086300L));
    assertEquals("cpu=0x7ffd0004, node=NULL, tcache=NULL",
        args(decoder(vdso, "getcpu"), 0x7ffd0004L));
  }

  @Test
  void decodesTheCLibrarysWrappersWhoseErrorsAreInErrno() throws Exception {
    ModuleImage libc = Conformance.image(LIBC.toString(), Files.readAllBytes(LIBC));
    ArgumentDecoder d = decoder(libc, "clock_gettime");
    assertEquals("clockid=CLOCK_MONOTONIC, tp=0x7ffd2c1e9a40", args(d, 1, 0x7ffd2c1e9a40L));
    assertEquals(DecodedReturn.success("0"), d.returnValue(0));
    DecodedReturn failed = d.returnValue(0xffff_ffffL);
    assertTrue(failed.failed());
    assertEquals("-1", failed.value());
    assertNull(failed.errorName(), "the wrapper's errno is thread memory, never recorded");
    assertEquals("clockid=CLOCK_MONOTONIC_RAW, res=0x10", args(decoder(libc, "clock_getres"),
        4, 0x10));
    assertEquals("tv=0x20, tz=0x30", args(decoder(libc, "gettimeofday"), 0x20, 0x30));
    assertEquals("cpu=0x40, node=NULL", args(decoder(libc, "getcpu"), 0x40));
    ArgumentDecoder time = decoder(libc, "time");
    assertEquals(DecodedReturn.success("1765086300"), time.returnValue(1765086300L));
    assertEquals(DecodedReturn.failure("-1", null), time.returnValue(-1));
    assertEquals("buf=0x50, buflen=16, flags=GRND_NONBLOCK",
        args(decoder(libc, "getrandom"), 0x50, 16, 1));
  }

  @Test
  void namesDynamicClocksAndIdsTheKernelDoesNotDefine() {
    ArgumentDecoder d = ArgumentDecoders.libc("clock_gettime");
    // clock_getcpuclockid(1234): ~1234 << 3 | CPUCLOCK_SCHED; pthread_getcpuclockid: bit 2.
    assertEquals("clockid=PROCESS_CPUCLOCK(pid=1234, SCHED), tp=NULL", args(d, ~1234L << 3 | 2));
    assertEquals("clockid=THREAD_CPUCLOCK(tid=77, SCHED), tp=NULL",
        args(d, ~77L << 3 | 4 | 2));
    assertEquals("clockid=FD_CLOCK(fd=3), tp=NULL", args(d, ~3L << 3 | 3));
    assertEquals("clockid=CLOCK_TAI, tp=NULL", args(d, 11));
    assertEquals("clockid=CLOCK_12345, tp=NULL", args(d, 12345));
    // clockid_t is an int: the upper half of rdi is not the caller's.
    assertEquals("clockid=CLOCK_MONOTONIC, tp=NULL", args(d, 0x7f00_0000_0000_0001L));
  }

  @Test
  void everyRegisterValueDecodesToValidText() {
    long[] values = {0, 1, -1, Long.MIN_VALUE, Long.MAX_VALUE, 0x8000_0000L, -4095, -4096};
    for (String name : Decoders.DECODED) {
      for (ArgumentDecoder d : List.of(ArgumentDecoders.vdso(name), ArgumentDecoders.libc(name))) {
        for (long v : values) {
          List<DecodedArgument> a = d.arguments(new ArgumentRegisters(v, v, v, v, v, v));
          assertFalse(a.isEmpty(), name);
          assertTrue(a.size() <= ArgumentDecoder.MAX_ARGUMENTS, name);
          d.returnValue(v); // the record's constructor validates the text
        }
      }
    }
  }

  @Test
  void offersNothingForOtherFunctionsOrModules() throws Exception {
    ModuleImage libc = Conformance.image(LIBC.toString(), Files.readAllBytes(LIBC));
    assertTrue(plugin.argumentDecoder(libc, libc.symbol("write").orElseThrow()).isEmpty());
    // A function of another module that happens to be called time: no C library, no decoder.
    ModuleSymbol time = new ModuleSymbol("time", "", false, 0x1000, 16, true, true);
    ModuleImage vdso = Conformance.image("[vdso]", LiveVdso.image());
    assertTrue(plugin.argumentDecoder(vdso, time).isEmpty(), "0x1000 is no vDSO export");
    ModuleSymbol data = new ModuleSymbol("clock_gettime", "GLIBC_2.17", true, 0x1000, 8, false,
        true);
    assertTrue(plugin.argumentDecoder(libc, data).isEmpty(), "data is not a function");
    assertEquals(ArgumentDecoders.libc("time"), plugin.argumentDecoder(libc,
        new ModuleSymbol("time", "GLIBC_2.2.5", true, 0x1000, 16, true, true)).orElseThrow(),
        "glibc's version says which library it is");
  }
}
