package dev.polystack.host.elf;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A file truncated while it is parsed (a target can truncate a library it owns while polystack
 * reads it) must give the usual {@link ElfParseException}. Reading through a memory mapping, the
 * first access past the new end was a SIGBUS that surfaced as {@code java.lang.InternalError}.
 */
class TruncatedFileTest {
  @TempDir Path dir;

  private Path copyOfLibc() throws Exception {
    Path copy = dir.resolve("libc.so.6");
    Files.copy(TestBinaries.require(TestBinaries.LIBC), copy);
    return copy;
  }

  private static void truncate(Path file, long size) throws Exception {
    try (FileChannel ch = FileChannel.open(file, StandardOpenOption.WRITE)) {
      ch.truncate(size);
    }
  }

  @Test
  void truncatedAfterOpenGivesParseErrorsNotInternalError() throws Exception {
    Path lib = copyOfLibc();
    ElfFile elf = ElfFile.open(lib); // headers and section headers read
    truncate(lib, 4096);

    for (ElfCall call : new ElfCall[] {elf::dynamicSymbols, elf::ehFrame,
        () -> elf.findInRodata("GLIBC".getBytes(StandardCharsets.US_ASCII))}) {
      ElfParseException e = assertThrows(ElfParseException.class, call::run);
      assertTrue(e.getMessage().contains("shrank"), e.getMessage());
      assertTrue(e.getMessage().startsWith(lib.toString()), e.getMessage());
    }
    ElfParseException all = assertThrows(ElfParseException.class, () -> elf.source().readAll());
    assertTrue(all.getMessage().contains("shrank"), all.getMessage());
  }

  /**
   * The same while another thread truncates and restores the file in a loop: every parse either
   * succeeds or is refused, and both happen, so truncation did overlap parses. The truncator's
   * own failure fails the test rather than quietly ending the churn.
   */
  @Test
  void truncatedWhileParsingNeverThrowsAnythingElse() throws Exception {
    Path lib = copyOfLibc();
    byte[] original = Files.readAllBytes(lib);
    AtomicReference<Throwable> truncatorFailed = new AtomicReference<>();
    AtomicLong cycles = new AtomicLong();
    Thread truncator = new Thread(() -> {
      try {
        while (!Thread.currentThread().isInterrupted()) {
          truncate(lib, 8192);
          Files.write(lib, original, StandardOpenOption.WRITE);
          cycles.incrementAndGet();
        }
      } catch (Exception e) {
        if (!Thread.currentThread().isInterrupted()) {
          truncatorFailed.set(e); // an interrupt ends a write at the end; anything else fails
        }
      }
    });
    truncator.start();
    int parsed = 0;
    int refused = 0;
    long deadline = System.nanoTime() + 60_000_000_000L;
    try {
      // Until both outcomes were seen (at least 200 parses), or the deadline.
      for (int i = 0; (i < 200 || parsed == 0 || refused == 0) && System.nanoTime() < deadline
          && truncatorFailed.get() == null; i++) {
        try {
          try (ElfFile elf = ElfFile.open(lib)) {
            elf.dynamicSymbols();
            elf.staticSymbols();
            elf.ehFrame();
          }
          parsed++;
        } catch (ElfParseException e) {
          refused++; // the expected outcome while the file is short
        }
      }
    } finally {
      truncator.interrupt();
      truncator.join();
    }
    assertNull(truncatorFailed.get(), () -> "the truncator failed: " + truncatorFailed.get());
    String seen = parsed + " parsed, " + refused + " refused over " + cycles.get()
        + " truncations";
    assertTrue(refused > 0, "no parse overlapped a truncation: " + seen);
    assertTrue(parsed > 0, "no parse of the whole file succeeded: " + seen);
  }

  /** A failed read leaves the source usable: the same ElfFile reads again once the file is back. */
  @Test
  void aRestoredFileReadsAgain() throws Exception {
    Path lib = copyOfLibc();
    byte[] original = Files.readAllBytes(lib);
    ElfFile elf = ElfFile.open(lib);
    ElfSource source = elf.source();
    truncate(lib, 4096);
    byte[] buf = new byte[64];
    assertEquals(0, source.read(original.length - 64, buf, 0, 64));
    Files.write(lib, original, StandardOpenOption.WRITE);
    assertEquals(64, source.read(original.length - 64, buf, 0, 64));
    assertEquals(original.length, source.readAll().length);
  }

  @FunctionalInterface
  private interface ElfCall {
    Object run() throws ElfParseException;
  }
}
