package dev.polystack.host.monitor;

import java.nio.file.Path;

/**
 * A site resolved in one process.
 *
 * @param spec what the user asked for
 * @param module the module's path as the process maps it ({@code [vdso]}, or the mapping's
 *     name or {@code [anonymous]} for an address site)
 * @param file the module as polystack opens it (through /proc/PID/root); null for the vDSO and
 *     an address site, which no file holds
 * @param fileOffset where the probed instruction is in the file (a uprobe's offset); in the
 *     image for the vDSO, in the mapping's offset space for an address site
 * @param address where it is in the process
 */
public record ProbeSite(SiteSpec spec, String module, Path file, long fileOffset, long address) {
  public String name() {
    return spec.toString();
  }
}
