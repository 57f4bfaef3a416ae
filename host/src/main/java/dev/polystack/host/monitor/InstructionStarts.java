package dev.polystack.host.monitor;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Whether an address inside a function starts an instruction, by binutils' objdump sweeping the
 * function from its entry. A uprobe inside an instruction is accepted by the kernel whenever the
 * bytes there decode to something else, and then runs that instead: the target computes wrong
 * results (docs/probes.md, "Sites"). So +OFF is refused unless objdump says it is a start.
 */
final class InstructionStarts {
  /** Largest stretch disassembled: a function longer than this is checked up to the offset. */
  private static final long MAX_BYTES = 1 << 20;
  private static final int MAX_OUTPUT = 16 << 20;
  private static final Pattern LINE = Pattern.compile("(?m)^\\s*([0-9a-f]+):\\t");

  private InstructionStarts() {}

  /**
   * Checks that {@code entry + offset} (link-time addresses of {@code file}) starts an
   * instruction of the function at {@code entry}.
   *
   * @throws ProbeSites.SiteException when it does not, or when objdump cannot tell
   */
  static void check(Path file, String site, long entry, long size, long offset)
      throws ProbeSites.SiteException {
    long end = entry + Math.min(MAX_BYTES, Math.max(size, offset + 1));
    Process p;
    try {
      p = new ProcessBuilder("objdump", "-d", "--no-show-raw-insn",
          "--start-address=0x" + Long.toHexString(entry),
          "--stop-address=0x" + Long.toHexString(end), file.toString())
          .redirectErrorStream(true).start();
    } catch (IOException e) {
      throw new ProbeSites.SiteException(site + ": cannot check that +OFF starts an instruction"
          + " (objdump: " + e.getMessage() + "); install binutils, or probe the function's"
          + " entry");
    }
    String text;
    try (InputStream in = p.getInputStream()) {
      text = new String(in.readNBytes(MAX_OUTPUT), StandardCharsets.UTF_8);
      if (!p.waitFor(30, TimeUnit.SECONDS)) {
        throw new IOException("objdump did not finish in 30 s");
      }
    } catch (IOException e) {
      throw new ProbeSites.SiteException(site + ": cannot check that +OFF starts an instruction"
          + " (" + e.getMessage() + "); probe the function's entry");
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new ProbeSites.SiteException(site + ": interrupted while checking +OFF");
    } finally {
      p.destroyForcibly();
    }
    long want = entry + offset;
    Matcher m = LINE.matcher(text);
    long before = -1;
    while (m.find()) {
      long at = Long.parseUnsignedLong(m.group(1), 16);
      if (at == want) {
        return;
      }
      if (at < want) {
        before = at;
      }
    }
    throw new ProbeSites.SiteException(site + ": +0x" + Long.toHexString(offset)
        + " is inside an instruction" + (before >= entry ? " (the one at +0x"
            + Long.toHexString(before - entry) + ")" : "") + ", and a uprobe there would corrupt"
        + " the target's execution; take an instruction's offset from objdump -d");
  }
}
