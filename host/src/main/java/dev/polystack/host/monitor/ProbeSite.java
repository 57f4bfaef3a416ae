package dev.polystack.host.monitor;

import java.nio.file.Path;
import java.util.List;

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
 * @param returns where the function's ret instructions are in the process, for a hardware site
 *     whose return is watched; else empty
 */
public record ProbeSite(SiteSpec spec, String module, Path file, long fileOffset, long address,
    List<Long> returns) {
  public ProbeSite {
    returns = List.copyOf(returns);
  }

  public ProbeSite(SiteSpec spec, String module, Path file, long fileOffset, long address) {
    this(spec, module, file, fileOffset, address, List.of());
  }

  /** The same site with its return breakpoints at {@code rets}. */
  ProbeSite withReturns(List<Long> rets) {
    return new ProbeSite(spec, module, file, fileOffset, address, rets);
  }

  public String name() {
    return spec.toString();
  }
}
