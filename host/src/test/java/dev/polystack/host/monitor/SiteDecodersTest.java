package dev.polystack.host.monitor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.polystack.host.proc.MemoryMapping;
import dev.polystack.host.proc.ProcFs;
import dev.polystack.plugin.api.ArgumentDecoder;
import dev.polystack.plugin.api.ArgumentRegisters;
import dev.polystack.plugin.api.DecodedArgument;
import dev.polystack.plugin.api.DecodedReturn;
import dev.polystack.plugin.api.ModuleImage;
import dev.polystack.plugin.api.ModuleSymbol;
import dev.polystack.vdso.VdsoPlugin;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * Decoders found for sites resolved in this JVM's own process, from the bundled vdso plug-in,
 * and what a failing decoder leaves: raw registers, a count and one warning.
 */
class SiteDecodersTest {
  private static final int PID = (int) ProcessHandle.current().pid();
  private static final long[] MONOTONIC = {1, 0x7ffd2c1e9a40L, 0, 0, 0, 0};

  private static List<MemoryMapping> mappings() throws Exception {
    return ProbeSession.mappings(ProcFs.system(), PID);
  }

  private static SiteDecoders.Source vdsoPlugin(List<ModuleSymbol> asked) {
    VdsoPlugin plugin = new VdsoPlugin();
    return (image, symbol) -> {
      asked.add(symbol);
      return plugin.argumentDecoder(image, symbol).map(d -> new SiteDecoders.Offer("vdso", d));
    };
  }

  private static String text(SiteDecoders.Decoded d) {
    return d.arguments().stream().map(a -> a.name() + "=" + a.value())
        .collect(Collectors.joining(", "));
  }

  @Test
  void theVdsoPluginDecodesLibcAndVdsoFunctionSitesOnly() throws Exception {
    List<MemoryMapping> maps = mappings();
    List<ProbeSite> sites = new ArrayList<>(ProbeSites.resolve(Path.of("/proc"), PID, maps,
        List.of(SiteSpec.parse("libc.so.6:clock_gettime"),
            SiteSpec.parse("libc.so.6:clock_gettime%return"), SiteSpec.parse("libc.so.6:write"))));
    // Inside the function (where it starts an instruction or not, which is not asked here).
    ProbeSite first = sites.get(0);
    sites.add(new ProbeSite(SiteSpec.parse("libc.so.6:clock_gettime+4"), first.module(),
        first.file(), first.fileOffset() + 4, first.address() + 4));
    sites.addAll(ProbeSites.resolve(Path.of("/proc"), PID, maps,
        List.of(SiteSpec.parse("[vdso]:clock_gettime")), true, false));
    List<ModuleSymbol> asked = new ArrayList<>();
    SiteDecoders decoders = SiteDecoders.find(PID, maps, sites, vdsoPlugin(asked), s -> { });
    assertEquals("vdso", decoders.decoderOf(sites.get(0)));
    assertEquals("vdso", decoders.decoderOf(sites.get(1)));
    assertNull(decoders.decoderOf(sites.get(2)), "write is not a time function");
    assertNull(decoders.decoderOf(sites.get(3)), "+OFF is inside the function");
    assertEquals("vdso", decoders.decoderOf(sites.get(4)));
    assertEquals(4, asked.size(), "an offset site is not asked about: " + asked);
    assertTrue(asked.get(0).version().startsWith("GLIBC_"), asked.get(0).toString());

    SiteDecoders.Decoded entry = decoders.decode(new ProbeSession.Hit(sites.get(0), PID, 1, 5,
        MONOTONIC, false, 0, 0));
    assertEquals("clockid=CLOCK_MONOTONIC, tp=0x7ffd2c1e9a40", text(entry));
    assertNull(entry.returned());
    SiteDecoders.Decoded failed = decoders.decode(new ProbeSession.Hit(sites.get(1), PID, 1, 9,
        new long[] {12345, 0, 0, 0, 0, 0}, true, 0xffff_ffffL, 4));
    assertEquals("clockid=CLOCK_12345, tp=NULL", text(failed));
    assertEquals(DecodedReturn.failure("-1", null), failed.returned());
    SiteDecoders.Decoded lost = decoders.decode(new ProbeSession.Hit(sites.get(1), PID, 1, 9,
        null, true, 0, 4));
    assertEquals(List.of(), lost.arguments(), "return_args_lost: no entry registers");
    assertEquals(DecodedReturn.success("0"), lost.returned());
    SiteDecoders.Decoded vdso = decoders.decode(new ProbeSession.Hit(sites.get(4), PID, 1, 9,
        MONOTONIC, true, -22, 4));
    assertEquals(DecodedReturn.failure("-EINVAL", "EINVAL"), vdso.returned());
    assertNull(decoders.decode(new ProbeSession.Hit(sites.get(2), PID, 1, 5, MONOTONIC, false,
        0, 0)));
    assertEquals(0, decoders.failed());
  }

  @Test
  void aDecoderThatThrowsOrAnswersGarbageIsCountedAndWarnedOfOnce() throws Exception {
    ProbeSite site = ProbeSites.resolve(Path.of("/proc"), PID, mappings(),
        List.of(SiteSpec.parse("libc.so.6:clock_gettime%return"))).get(0);
    List<String> warnings = new ArrayList<>();
    for (ArgumentDecoder bad : List.of(throwing(), twice(), nulls())) {
      warnings.clear();
      SiteDecoders decoders = new SiteDecoders(Map.of(site, new SiteDecoders.Offer("broken",
          bad)), warnings::add);
      for (int i = 0; i < 3; i++) {
        assertNull(decoders.decode(new ProbeSession.Hit(site, PID, 1, 5, MONOTONIC, true, 0,
            1)));
      }
      assertEquals(3, decoders.failed());
      assertEquals(1, warnings.size(), warnings.toString());
      assertTrue(warnings.get(0).startsWith("plug-in 'broken' could not decode a record of"
          + " libc.so.6:clock_gettime%return ("), warnings.get(0));
      assertTrue(warnings.get(0).endsWith("counted as decode_failed; further failures are not"
          + " shown"), warnings.get(0));
    }
  }

  private static ArgumentDecoder throwing() {
    return new ArgumentDecoder() {
      @Override
      public List<DecodedArgument> arguments(ArgumentRegisters entry) {
        throw new IllegalStateException("bug\nin the plug-in");
      }

      @Override
      public DecodedReturn returnValue(long returnRegister) {
        return DecodedReturn.success("0");
      }
    };
  }

  private static ArgumentDecoder twice() {
    return new ArgumentDecoder() {
      @Override
      public List<DecodedArgument> arguments(ArgumentRegisters entry) {
        return List.of(new DecodedArgument("x", "1"), new DecodedArgument("x", "2"));
      }

      @Override
      public DecodedReturn returnValue(long returnRegister) {
        return DecodedReturn.success("0");
      }
    };
  }

  private static ArgumentDecoder nulls() {
    return new ArgumentDecoder() {
      @Override
      public List<DecodedArgument> arguments(ArgumentRegisters entry) {
        return List.of();
      }

      @Override
      public DecodedReturn returnValue(long returnRegister) {
        return null;
      }
    };
  }

  @Test
  void aSourceThatOffersNothingLeavesEverySiteRaw() throws Exception {
    List<MemoryMapping> maps = mappings();
    List<ProbeSite> sites = ProbeSites.resolve(Path.of("/proc"), PID, maps,
        List.of(SiteSpec.parse("libc.so.6:clock_gettime")));
    SiteDecoders none = SiteDecoders.find(PID, maps, sites,
        (ModuleImage image, ModuleSymbol symbol) -> Optional.empty(), s -> { });
    assertNull(none.decoderOf(sites.get(0)));
    assertNull(none.decode(new ProbeSession.Hit(sites.get(0), PID, 1, 5, MONOTONIC, false, 0,
        0)));
  }
}
