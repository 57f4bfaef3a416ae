package dev.polystack.vdso;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.polystack.plugin.api.Capability;
import dev.polystack.plugin.api.kit.Conformance;
import java.io.IOException;
import org.junit.jupiter.api.Test;

/**
 * The plug-in author kit run on the vDSO tracer: descriptor checks, and planning on the live
 * vDSO image of this very JVM (read from /proc/self/mem) and on every truncated copy of it.
 */
class VdsoConformanceTest {

  @Test
  void descriptorIsSaneAndLoadable() {
    var d = Conformance.of(VdsoPlugin::new).checkDescriptor();
    assertEquals("vdso", d.id());
    assertTrue(d.has(Capability.DECODE_CALLS));
  }

  @Test
  void plansOnTheLiveVdsoAndSurvivesEveryTruncation() throws IOException {
    int sites = Conformance.of(VdsoPlugin::new).checkProbePlugin("[vdso]", LiveVdso.image(), 4);
    // Two slots per function (entry, then its return): four slots trace two functions.
    assertEquals(2, sites);
  }
}
