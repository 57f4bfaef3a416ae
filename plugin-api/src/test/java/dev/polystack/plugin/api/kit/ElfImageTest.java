package dev.polystack.plugin.api.kit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.polystack.plugin.api.ModuleImage;
import dev.polystack.plugin.api.ModuleSection;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.zip.GZIPInputStream;
import org.junit.jupiter.api.Test;

/**
 * The kit's image reads a section's file bytes as the host's does (API 2.0, {@code
 * readSection}): a stripped library of the snapshot corpus names its debug file in {@code
 * .gnu_debuglink}, a section that is not loaded.
 */
class ElfImageTest {
  private static final Path MODULE = Path.of(System.getProperty("basedir", "."), "..", "host",
      "src", "test", "resources", "snapshots", "modules",
      "3bac05767a0ab0a1aca196738305ca2f2d1f3430970e8b884dcd96e8455793fa.gz").normalize();

  @Test
  void readSectionReadsAnUnloadedSectionWithinItsBounds() throws Exception {
    byte[] elf;
    try (InputStream in = new GZIPInputStream(Files.newInputStream(MODULE))) {
      elf = in.readAllBytes();
    }
    ModuleImage image = Conformance.image("corpus-module", elf);
    ModuleSection link = image.section(".gnu_debuglink").orElseThrow();
    assertEquals(0, link.address(), "not loaded");
    byte[] bytes = new byte[(int) link.size() + 16];
    assertEquals(link.size(), image.readSection(link, 0, bytes, 0, bytes.length), "cut at its end");
    int nul = 0;
    while (bytes[nul] != 0) {
      nul++;
    }
    String file = new String(bytes, 0, nul, StandardCharsets.US_ASCII);
    assertTrue(file.endsWith(".debug"), file);
    assertEquals(0, image.readSection(link, link.size(), bytes, 0, 4), "past its end");
    assertEquals(0, image.readSection(new ModuleSection(".gnu_debuglink", 1, 0, 0,
        link.size() + 1), 0, bytes, 0, 4), "a section of another image");
  }
}
