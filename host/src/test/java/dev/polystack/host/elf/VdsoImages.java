package dev.polystack.host.elf;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/** Copies a process's vDSO out of /proc/PID/mem, using the [vdso] line of /proc/PID/maps. */
final class VdsoImages {
  record Image(long base, byte[] bytes) {}

  private VdsoImages() {}

  static Image read(String pid) throws IOException {
    List<String> maps = Files.readAllLines(Path.of("/proc", pid, "maps"));
    for (String line : maps) {
      if (line.endsWith("[vdso]")) {
        String[] range = line.substring(0, line.indexOf(' ')).split("-");
        long start = Long.parseUnsignedLong(range[0], 16);
        long end = Long.parseUnsignedLong(range[1], 16);
        byte[] bytes = new byte[(int) (end - start)];
        try (RandomAccessFile mem = new RandomAccessFile("/proc/" + pid + "/mem", "r")) {
          mem.seek(start);
          mem.readFully(bytes);
        }
        return new Image(start, bytes);
      }
    }
    throw new IOException("no [vdso] mapping in /proc/" + pid + "/maps");
  }
}
