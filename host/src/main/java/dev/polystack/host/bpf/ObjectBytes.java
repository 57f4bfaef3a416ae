package dev.polystack.host.bpf;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;

/** The bytes of a committed BPF object: a classpath resource, or a file named by a property. */
final class ObjectBytes {
  private ObjectBytes() {}

  /**
   * @param resource the object on the classpath
   * @param property a system property that, when set, names a file to load instead (tests,
   *     and trying a rebuilt object without repackaging)
   */
  static byte[] read(String resource, String property) throws BpfLoadException {
    String override = System.getProperty(property);
    try {
      if (override != null && !override.isEmpty()) {
        return Files.readAllBytes(Path.of(override));
      }
      try (InputStream in = ObjectBytes.class.getResourceAsStream(resource)) {
        if (in == null) {
          throw new BpfLoadException("the BPF object " + resource + " is missing from the"
              + " classpath: reinstall polystack");
        }
        return in.readAllBytes();
      }
    } catch (IOException e) {
      String why = e instanceof NoSuchFileException ? "no such file" : e.getMessage();
      throw new BpfLoadException("reading the BPF object "
          + (override != null ? override : resource) + " failed: " + why
          + ": check the path and its permissions", e);
    }
  }
}
