package dev.polystack.host.monitor;

import java.nio.file.Path;

/**
 * A site resolved in one process.
 *
 * @param spec what the user asked for
 * @param module the module's path as the process maps it
 * @param file the module as polystack opens it (through /proc/PID/root)
 * @param fileOffset where the probed instruction is in the file (a uprobe's offset)
 * @param address where it is in the process
 */
public record ProbeSite(SiteSpec spec, String module, Path file, long fileOffset, long address) {
  public String name() {
    return spec.toString();
  }
}
