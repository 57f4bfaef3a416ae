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
 * @param watchLength for a runtime site, the bytes at {@code address} a read/write breakpoint
 *     watches; 0 for code (an execution breakpoint or a uprobe)
 */
public record ProbeSite(SiteSpec spec, String module, Path file, long fileOffset, long address,
    List<Long> returns, int watchLength) {
  public ProbeSite {
    returns = List.copyOf(returns);
    if (watchLength != 0 && (!returns.isEmpty() || file != null)) {
      throw new IllegalArgumentException("a watched datum has no file and no returns");
    }
  }

  public ProbeSite(SiteSpec spec, String module, Path file, long fileOffset, long address) {
    this(spec, module, file, fileOffset, address, List.of(), 0);
  }

  /** The same site with its return breakpoints at {@code rets}. */
  ProbeSite withReturns(List<Long> rets) {
    return new ProbeSite(spec, module, file, fileOffset, address, rets, watchLength);
  }

  public String name() {
    return spec.toString();
  }
}
