package dev.polystack.host.snapshot;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.zip.ZipEntry;
import java.util.zip.ZipOutputStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class JsonReaderTest {
  @TempDir Path dir;

  @Test
  void readsObjectsArraysAndNumbersAsLongOrDouble() {
    Object v = JsonReader.parse(" {\"a\": [1, -0, 2.5, 1e3, \"x\\u0041\\n\"], \"b\": {\"c\": null,"
        + " \"d\": true, \"e\": false}, \"big\": 9223372036854775807}\n");
    Map<?, ?> m = (Map<?, ?>) v;
    assertEquals(Arrays.asList(1L, 0L, 2.5, 1000.0, "xA\n"), m.get("a"));
    assertEquals(Long.MAX_VALUE, m.get("big"));
    Map<?, ?> b = (Map<?, ?>) m.get("b");
    assertEquals(List.of("c", "d", "e"), List.copyOf(b.keySet()));
    assertEquals(Arrays.asList(null, true, false), new java.util.ArrayList<>(b.values()));
    assertEquals(List.of("b", "a"), List.copyOf(
        ((Map<?, ?>) JsonReader.parse("{\"b\":1,\"a\":2}")).keySet()));
  }

  @Test
  void malformedInputFailsWithOneLineIllegalArgumentException() {
    String deep = "[".repeat(100_000) + "]".repeat(100_000);
    for (String bad : List.of("", "{", "{\"a\":1,}", "{\"a\":1} x", "{'a':1}", "{\"a\":01}",
        "[NaN]", "{\"a\":\"\u0001\"}", "{\"a\":1,\"a\":2}", "[99999999999999999999]", "[tru]",
        "{\"a\":\"\\x\"}", "/*c*/{}", deep)) {
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
          () -> JsonReader.parse(bad), bad.length() > 40 ? bad.substring(0, 40) : bad);
      assertEquals(1, e.getMessage().lines().count(), e.getMessage());
      assertTrue(!e.getMessage().contains("LENIENT"), e.getMessage());
    }
  }

  @Test
  void aCorruptHeaderIsOneSnapshotExceptionLine() throws Exception {
    Path file = dir.resolve("corrupt.snapshot");
    try (OutputStream out = Files.newOutputStream(file);
        ZipOutputStream zip = new ZipOutputStream(out)) {
      zip.putNextEntry(new ZipEntry(SnapshotFile.HEADER));
      zip.write("{\"format\": \"polystack-snapshot\", \"version\": [1,}"
          .getBytes(StandardCharsets.UTF_8));
      zip.closeEntry();
    }
    SnapshotException e = assertThrows(SnapshotException.class, () -> SnapshotFile.read(file));
    assertTrue(e.getMessage().contains("malformed " + SnapshotFile.HEADER), e.getMessage());
    assertEquals(1, e.getMessage().lines().count(), e.getMessage());
  }
}
