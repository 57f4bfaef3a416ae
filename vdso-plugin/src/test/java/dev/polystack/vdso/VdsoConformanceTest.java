package dev.polystack.vdso;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.polystack.plugin.api.Capability;
import dev.polystack.plugin.api.kit.Conformance;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
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
    int sites = Conformance.of(VdsoPlugin::new).checkProbePlugin("[vdso]", liveVdso(), 4);
    // Two slots per function (entry, then its return): four slots trace two functions.
    assertEquals(2, sites);
  }

  /** This process's vDSO image, as the host reads a target's. */
  private static byte[] liveVdso() throws IOException {
    String line = Files.readAllLines(Path.of("/proc/self/maps")).stream()
        .filter(l -> l.endsWith("[vdso]")).findFirst()
        .orElseThrow(() -> new AssertionError("no [vdso] mapping in /proc/self/maps"));
    String[] range = line.substring(0, line.indexOf(' ')).split("-");
    long start = Long.parseUnsignedLong(range[0], 16);
    long end = Long.parseUnsignedLong(range[1], 16);
    byte[] image = new byte[(int) (end - start)];
    try (RandomAccessFile mem = new RandomAccessFile("/proc/self/mem", "r")) {
      mem.seek(start);
      mem.readFully(image);
    }
    return image;
  }
}
