package dev.polystack.host.proc;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;

/** Bounded reads of /proc files with errno-to-reason translation. */
final class ProcFiles {
  private ProcFiles() {}

  /** What is being read and which process/thread it belongs to, for error messages. */
  record Subject(String description, Path directory) {}

  /**
   * Reads the whole file, failing if it is larger than {@code max} bytes. /proc files report size
   * 0, so the size cannot be checked up front.
   */
  static byte[] readBounded(Path file, int max, String what, Subject subject)
      throws ProcReadException {
    byte[] data = readUpTo(file, max + 1, what, subject);
    if (data.length > max) {
      throw new ProcReadException(
          ProcReadException.Reason.TOO_LARGE, what, file, "larger than " + max + " bytes", null);
    }
    return data;
  }

  /** Reads at most {@code max} bytes; the caller decides what a full buffer means. */
  static byte[] readUpTo(Path file, int max, String what, Subject subject)
      throws ProcReadException {
    try (InputStream in = Files.newInputStream(file)) {
      return in.readNBytes(max);
    } catch (IOException e) {
      throw translate(e, what, file, subject);
    }
  }

  static String readLink(Path link, String what, Subject subject) throws ProcReadException {
    try {
      return Files.readSymbolicLink(link).toString();
    } catch (IOException | UnsupportedOperationException e) {
      throw translate(e, what, link, subject);
    }
  }

  static ProcReadException translate(Exception e, String what, Path file, Subject subject) {
    String message = String.valueOf(e.getMessage());
    if (e instanceof NoSuchFileException || message.contains("No such process")) {
      // ENOENT on a file inside an existing process directory means the file itself is absent
      // (e.g. exe of a kernel thread); only a missing directory means the process is gone.
      if (e instanceof NoSuchFileException && Files.isDirectory(subject.directory())) {
        return new ProcReadException(
            ProcReadException.Reason.NOT_AVAILABLE, what, file, "file does not exist", e);
      }
      return ProcReadException.noSuchProcess(what, file, subject.description(), e);
    }
    if (e instanceof AccessDeniedException
        || message.contains("Permission denied")
        || message.contains("Operation not permitted")) {
      return new ProcReadException(
          ProcReadException.Reason.ACCESS_DENIED,
          what,
          file,
          "permission denied: run as root or grant CAP_SYS_PTRACE",
          e);
    }
    return new ProcReadException(ProcReadException.Reason.IO_ERROR, what, file, message, e);
  }
}
