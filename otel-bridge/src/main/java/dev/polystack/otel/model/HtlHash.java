package dev.polystack.otel.model;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/**
 * The {@code process.executable.build_id.htlhash} of a file, as semantic conventions define it:
 * SHA-256 over the first 4096 bytes, the last 4096 bytes and the file length as a big-endian
 * 64-bit number; the first 16 bytes of the digest in lower-case hex. It identifies a file that
 * has no GNU build id, and it is what the OpenTelemetry eBPF profiler sends for every mapping.
 */
public final class HtlHash {
  private static final int PART = 4096;

  private HtlHash() {}

  /** The hash of {@code file} (e.g. {@code /proc/PID/map_files/START-END}). */
  public static String of(Path file) throws IOException {
    try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
      long size = ch.size();
      MessageDigest sha = MessageDigest.getInstance("SHA-256");
      sha.update(read(ch, 0, (int) Math.min(PART, size)));
      sha.update(read(ch, Math.max(0, size - PART), (int) Math.min(PART, size)));
      sha.update(ByteBuffer.allocate(8).putLong(size).array());
      byte[] digest = sha.digest();
      return HexFormat.of().formatHex(digest, 0, 16);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is missing from this JDK", e);
    }
  }

  private static byte[] read(FileChannel ch, long position, int length) throws IOException {
    ByteBuffer buf = ByteBuffer.allocate(length);
    while (buf.hasRemaining()) {
      if (ch.read(buf, position + buf.position()) < 0) {
        throw new IOException("file shrank while hashing");
      }
    }
    return buf.array();
  }
}
