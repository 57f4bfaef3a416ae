package dev.polystack.vdso;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;

/** This test process's vDSO image, read from its own memory as the host reads a target's. */
final class LiveVdso {
  private LiveVdso() {}

  static byte[] image() throws IOException {
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
