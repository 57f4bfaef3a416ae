package dev.polystack.e2e;

import io.opentelemetry.proto.collector.profiles.v1development.ExportProfilesServiceRequest;
import java.io.IOException;
import java.io.InputStream;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import java.util.zip.ZipEntry;
import java.util.zip.ZipInputStream;

/**
 * Debian's protoc with the official .proto files shipped inside the opentelemetry-proto jar:
 * an oracle for our binary output that shares no code with the Java classes.
 */
final class Protoc {
  private Protoc() {}

  /** {@code protoc --decode=TYPE} of {@code file}; fails with protoc's message. */
  static String decode(String type, Path file, Path work) throws IOException,
      InterruptedException {
    Path protos = extractProtos(work.resolve("protos"));
    Path out = work.resolve("protoc.out");
    Path err = work.resolve("protoc.err");
    Process p;
    try {
      p = new ProcessBuilder("protoc", "-I", protos.toString(), "--decode=" + type,
          "opentelemetry/proto/collector/profiles/v1development/profiles_service.proto")
          .redirectInput(file.toFile())
          .redirectOutput(out.toFile())
          .redirectError(err.toFile())
          .start();
    } catch (IOException e) {
      throw new IllegalStateException("protoc is missing: install protobuf-compiler"
          + " (./run-tests does)", e);
    }
    if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0) {
      throw new AssertionError("protoc --decode failed: " + Files.readString(err));
    }
    return Files.readString(out, StandardCharsets.UTF_8);
  }

  private static Path extractProtos(Path dir) throws IOException {
    Path jar;
    try {
      jar = Path.of(ExportProfilesServiceRequest.class.getProtectionDomain().getCodeSource()
          .getLocation().toURI());
    } catch (URISyntaxException e) {
      throw new IOException(e);
    }
    try (ZipInputStream zip = new ZipInputStream(Files.newInputStream(jar))) {
      for (ZipEntry e; (e = zip.getNextEntry()) != null; ) {
        if (e.getName().endsWith(".proto") && !e.getName().contains("..")) {
          Path target = dir.resolve(e.getName());
          Files.createDirectories(target.getParent());
          Files.copy((InputStream) zip, target);
        }
      }
    }
    return dir;
  }
}
