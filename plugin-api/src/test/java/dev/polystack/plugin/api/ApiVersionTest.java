package dev.polystack.plugin.api;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Set;
import org.junit.jupiter.api.Test;

class ApiVersionTest {

  @Test
  void sameMajorAndOlderMinorLoad() {
    ApiVersion host = new ApiVersion(1, 3);
    assertTrue(host.canLoad(new ApiVersion(1, 0)));
    assertTrue(host.canLoad(new ApiVersion(1, 3)));
    assertFalse(host.canLoad(new ApiVersion(1, 4)), "a newer minor may call what the host lacks");
    assertFalse(host.canLoad(new ApiVersion(2, 0)));
    assertFalse(host.canLoad(new ApiVersion(0, 9)));
  }

  @Test
  void parsesAndRejects() {
    assertEquals(new ApiVersion(1, 12), ApiVersion.parse(" 1.12 "));
    assertEquals("2.0", ApiVersion.CURRENT.toString());
    for (String bad : new String[] {"1", "1.2.3", "a.b", "-1.0", ""}) {
      assertThrows(IllegalArgumentException.class, () -> ApiVersion.parse(bad), bad);
    }
  }

  @Test
  void descriptorValidatesIdsAndKeepsCapabilityOrder() {
    var d = new PluginDescriptor("lua-jit.2", "1", ApiVersion.CURRENT, "luajit",
        Set.of(Capability.SYMBOLIZE, Capability.DETECT, Capability.WALK_FRAMES), "x");
    assertEquals("[DETECT, WALK_FRAMES, SYMBOLIZE]", d.capabilities().toString());
    assertThrows(UnsupportedOperationException.class,
        () -> d.capabilities().add(Capability.JIT_CODE));
    assertThrows(IllegalArgumentException.class,
        () -> new PluginDescriptor("Bad Id", "1", ApiVersion.CURRENT, "", Set.of(), "x"));
    assertThrows(IllegalArgumentException.class,
        () -> new PluginDescriptor("ok", " ", ApiVersion.CURRENT, "", Set.of(), "x"));
    assertThrows(NullPointerException.class,
        () -> new PluginDescriptor("ok", "1", null, "", Set.of(), "x"));
    assertEquals("plan-probes", Capability.PLAN_PROBES.displayName());
  }

  @Test
  void atLeastComparesMinorsWithinOneMajor() {
    ApiVersion v = new ApiVersion(1, 6);
    assertTrue(v.atLeast(1, 6));
    assertTrue(v.atLeast(1, 1));
    assertFalse(v.atLeast(1, 7));
    assertFalse(v.atLeast(2, 0));
    assertFalse(v.atLeast(0, 9), "another major version is neither older nor newer");
  }
}
