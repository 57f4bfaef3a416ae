package dev.polystack.otel.otlp;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.polystack.otel.model.HtlHash;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.Arrays;
import java.util.HexFormat;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class HtlHashTest {

  @Test
  void headTailAndLengthOfALargeAndASmallFile(@TempDir Path dir) throws Exception {
    byte[] big = new byte[10_000];
    for (int i = 0; i < big.length; i++) {
      big[i] = (byte) (i * 31);
    }
    check(dir.resolve("big"), big);
    check(dir.resolve("small"), "tiny".getBytes());
  }

  private static void check(Path file, byte[] data) throws Exception {
    Files.write(file, data);
    MessageDigest sha = MessageDigest.getInstance("SHA-256");
    int part = Math.min(4096, data.length);
    sha.update(Arrays.copyOfRange(data, 0, part));
    sha.update(Arrays.copyOfRange(data, data.length - part, data.length));
    sha.update(ByteBuffer.allocate(8).putLong(data.length).array());
    assertEquals(HexFormat.of().formatHex(sha.digest(), 0, 16), HtlHash.of(file));
  }

  @Test
  void hashesARealBinary() throws IOException {
    assertEquals(32, HtlHash.of(Path.of("/bin/sh")).length());
  }
}
