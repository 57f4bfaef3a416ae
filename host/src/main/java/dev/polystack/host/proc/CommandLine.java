package dev.polystack.host.proc;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * Arguments from {@code /proc/PID/cmdline}. Empty for kernel threads and zombies. A process may
 * rewrite its argument area (setproctitle), so this is informational, not authoritative.
 *
 * @param truncated the file was longer than the configured bound; the last argument may be cut
 */
public record CommandLine(List<String> arguments, boolean truncated) {

  public CommandLine {
    arguments = List.copyOf(arguments);
  }

  static CommandLine parse(byte[] data, int max) {
    boolean truncated = data.length > max;
    int length = Math.min(data.length, max);
    List<String> args = new ArrayList<>();
    int start = 0;
    for (int i = 0; i < length; i++) {
      if (data[i] == 0) {
        args.add(new String(data, start, i - start, StandardCharsets.UTF_8));
        start = i + 1;
      }
    }
    if (start < length) {
      // No trailing NUL: truncated, or the process overwrote its argv.
      args.add(new String(data, start, length - start, StandardCharsets.UTF_8));
    }
    return new CommandLine(args, truncated);
  }

  /** argv[0], or empty string if there are no arguments. */
  public String program() {
    return arguments.isEmpty() ? "" : arguments.get(0);
  }
}
