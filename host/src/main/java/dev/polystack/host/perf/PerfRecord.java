package dev.polystack.host.perf;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * One ring-buffer record: header type and misc plus the bytes after the 8-byte header. {@code
 * wrapped} tells the record straddled the end of the ring and was reassembled.
 */
public record PerfRecord(int type, int misc, byte[] body, boolean wrapped) {

  /** Little-endian read-only view of {@link #body()}. */
  public ByteBuffer buffer() {
    return ByteBuffer.wrap(body).asReadOnlyBuffer().order(ByteOrder.LITTLE_ENDIAN);
  }

  public int size() {
    return body.length + 8;
  }
}
