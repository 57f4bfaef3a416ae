package dev.polystack.otel.local;

import dev.polystack.otel.model.Recording;
import java.io.IOException;
import java.io.OutputStream;

/** Writes a recording in one local file format. Implementations are stateless and thread-safe. */
public interface ProfileWriter {

  /**
   * Writes {@code recording} to {@code out}. Does not close {@code out}, so callers decide where
   * the bytes go (a file, a socket, a test buffer); it is flushed before this returns.
   */
  void write(Recording recording, OutputStream out) throws IOException;
}
