package dev.polystack.plugin.api;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** The value types of argument decoders (API 1.7) refuse what the host could not print. */
class ArgumentDecoderTest {

  @Test
  void argumentRegistersAreInDeclarationOrder() {
    ArgumentRegisters r = ArgumentRegisters.of(new long[] {1, 2, 3, 4, 5, -6});
    assertEquals(new ArgumentRegisters(1, 2, 3, 4, 5, -6), r);
    for (int i = 0; i < ArgumentRegisters.COUNT; i++) {
      assertEquals(i == 5 ? -6 : i + 1, r.get(i));
    }
    assertThrows(IndexOutOfBoundsException.class, () -> r.get(6));
    assertThrows(IndexOutOfBoundsException.class, () -> r.get(-1));
    assertThrows(IllegalArgumentException.class, () -> ArgumentRegisters.of(new long[5]));
    assertThrows(IllegalArgumentException.class, () -> ArgumentRegisters.of(null));
  }

  @Test
  void argumentNamesAreIdentifiersAndValuesOneLine() {
    assertEquals("clockid", new DecodedArgument("clockid", "CLOCK_MONOTONIC").name());
    new DecodedArgument("_x9", "0x7ffd2c1e9a40");
    new DecodedArgument("a".repeat(64), "v".repeat(DecodedArgument.MAX_VALUE_LENGTH));
    for (String bad : new String[] {"", "9lives", "tv.sec", "a b", "a".repeat(65), "é"}) {
      assertThrows(IllegalArgumentException.class, () -> new DecodedArgument(bad, "1"), bad);
    }
    for (String bad : new String[] {"", " ", "1\n2", "\u001b[31m",
        "v".repeat(DecodedArgument.MAX_VALUE_LENGTH + 1)}) {
      assertThrows(IllegalArgumentException.class, () -> new DecodedArgument("x", bad), bad);
    }
    assertThrows(NullPointerException.class, () -> new DecodedArgument(null, "1"));
    assertThrows(NullPointerException.class, () -> new DecodedArgument("x", null));
  }

  @Test
  void aReturnNamesAnErrorOnlyWhenItFailed() {
    DecodedReturn ok = DecodedReturn.success("0");
    assertFalse(ok.failed());
    assertNull(ok.errorName());
    DecodedReturn einval = DecodedReturn.failure("-EINVAL", "EINVAL");
    assertTrue(einval.failed());
    assertEquals("EINVAL", einval.errorName());
    DecodedReturn libc = DecodedReturn.failure("-1", null);
    assertTrue(libc.failed());
    assertNull(libc.errorName(), "a libc wrapper's errno is not in a register");
    assertThrows(IllegalArgumentException.class, () -> new DecodedReturn("0", false, "EINVAL"));
    assertThrows(IllegalArgumentException.class, () -> DecodedReturn.failure("-1", "E INVAL"));
    assertThrows(IllegalArgumentException.class, () -> DecodedReturn.success(""));
    assertThrows(IllegalArgumentException.class, () -> DecodedReturn.success("0\r"));
    assertThrows(NullPointerException.class, () -> DecodedReturn.success(null));
  }

  @Test
  void aProbePluginWithoutADecoderOffersNone() throws Exception {
    ProbePlugin old = new ProbePlugin() {
      @Override
      public PluginDescriptor descriptor() {
        return new PluginDescriptor("old", "1", new ApiVersion(2, 0), "", java.util.Set.of(),
            "a probe plug-in that decodes nothing");
      }

      @Override
      public boolean accepts(ModuleImage image) {
        return false;
      }

      @Override
      public ProbePlan plan(ModuleImage image, ProbeRequest request) {
        return new ProbePlan(List.of(), List.of());
      }

      @Override
      public ProbeMonitor monitor(ProbePlan plan) {
        return (hit, completed) -> { };
      }
    };
    assertEquals(Optional.empty(), old.argumentDecoder(null,
        new ModuleSymbol("clock_gettime", "GLIBC_2.17", true, 0x1000, 64, true, true)));
    assertTrue(ApiVersion.CURRENT.canLoad(old.descriptor().apiVersion()));
  }
}
