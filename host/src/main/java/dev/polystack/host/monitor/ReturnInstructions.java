package dev.polystack.host.monitor;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The {@code ret} instructions of a function, by binutils' objdump over its bytes, for the return
 * breakpoints of a {@code --hw} site: a call of the function ends at one of them with the stack
 * pointer it entered with, which pairs the two in the kernel (as {@code polystack vdso} does).
 * Refused when that cannot be known with certainty: a jump out of the function (a tail call
 * returns through another function's ret), an indirect jump, bytes objdump cannot decode, or no
 * ret at all. docs/probes.md, "Hardware-breakpoint sites".
 */
final class ReturnInstructions {
  private static final long MAX_BYTES = 1 << 16;
  private static final int MAX_OUTPUT = 4 << 20;
  private static final Pattern LINE = Pattern.compile("(?m)^\\s*([0-9a-f]+):\\t(.*)$");
  private static final Pattern RET = Pattern.compile("(?:(?:repz|rep|bnd)\\s+)?ret[qlw]?\\b.*");
  private static final Pattern JUMP =
      Pattern.compile("(?:(?:bnd|notrack)\\s+)*(j[a-z]+|loop[a-z]*)\\s+(\\S+).*");

  private ReturnInstructions() {}

  /**
   * The link-time addresses of the rets of the function at {@code entry} ({@code size} bytes)
   * of {@code file}.
   *
   * @throws ProbeSites.SiteException with the user's one line when they cannot be known
   */
  static List<Long> of(Path file, String site, long entry, long size)
      throws ProbeSites.SiteException {
    if (size <= 0 || size > MAX_BYTES) {
      throw new ProbeSites.SiteException(site + ": the function's size is " + (size <= 0
          ? "unknown" : size + " bytes") + ", so its ret instructions cannot be found for a"
          + " return breakpoint; probe its return without --hw");
    }
    long end = entry + size;
    String text = objdump(file, site, entry, end);
    List<Long> rets = new ArrayList<>();
    Matcher m = LINE.matcher(text);
    while (m.find()) {
      long at = Long.parseUnsignedLong(m.group(1), 16);
      String insn = m.group(2).strip();
      if (at < entry || at >= end) {
        continue;
      }
      if (insn.startsWith("(bad)")) {
        throw refuse(site, "bytes at +0x" + Long.toHexString(at - entry) + " do not decode");
      }
      if (RET.matcher(insn).matches()) {
        rets.add(at);
        continue;
      }
      Matcher j = JUMP.matcher(insn);
      if (j.matches()) {
        String target = j.group(2);
        if (target.startsWith("*")) {
          throw refuse(site, "an indirect jump at +0x" + Long.toHexString(at - entry)
              + " may leave it");
        }
        long to;
        try {
          to = Long.parseUnsignedLong(target, 16);
        } catch (NumberFormatException e) {
          throw refuse(site, "the jump at +0x" + Long.toHexString(at - entry)
              + " has a target objdump did not print as an address");
        }
        if (to < entry || to >= end) {
          throw refuse(site, "the jump at +0x" + Long.toHexString(at - entry) + " leaves it (a"
              + " tail call returns through another function)");
        }
      }
    }
    if (rets.isEmpty()) {
      throw refuse(site, "it has no ret instruction");
    }
    if (rets.contains(entry)) {
      throw refuse(site, "its entry is its ret");
    }
    return List.copyOf(rets);
  }

  private static ProbeSites.SiteException refuse(String site, String why) {
    return new ProbeSites.SiteException(site + ": its returns cannot be watched with hardware"
        + " breakpoints: " + why + "; probe its return without --hw");
  }

  private static String objdump(Path file, String site, long start, long end)
      throws ProbeSites.SiteException {
    Process p;
    try {
      p = new ProcessBuilder("objdump", "-d", "--no-show-raw-insn",
          "--start-address=0x" + Long.toHexString(start),
          "--stop-address=0x" + Long.toHexString(end), file.toString())
          .redirectErrorStream(true).start();
    } catch (IOException e) {
      throw new ProbeSites.SiteException(site + ": cannot find the function's ret instructions"
          + " (objdump: " + e.getMessage() + "); install binutils, or probe its return without"
          + " --hw");
    }
    try (InputStream in = p.getInputStream()) {
      String text = new String(in.readNBytes(MAX_OUTPUT), StandardCharsets.UTF_8);
      if (!p.waitFor(30, TimeUnit.SECONDS)) {
        throw new IOException("objdump did not finish in 30 s");
      }
      return text;
    } catch (IOException e) {
      throw new ProbeSites.SiteException(site + ": cannot find the function's ret instructions ("
          + e.getMessage() + "); probe its return without --hw");
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new ProbeSites.SiteException(site + ": interrupted while finding its returns");
    } finally {
      p.destroyForcibly();
    }
  }
}
