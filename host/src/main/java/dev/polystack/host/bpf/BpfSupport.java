package dev.polystack.host.bpf;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;

/**
 * Cheap checks, before anything is loaded, of whether the BPF backend can work here. A
 * {@link TickCapture#open} can still fail after they pass (its exception says why); these
 * catch the common cases with a clearer line and without touching the kernel.
 */
public final class BpfSupport {
  /** Set to any non-empty value to make {@link #unavailableReason()} refuse BPF (tests). */
  public static final String DISABLE_ENV = "POLYSTACK_BPF_DISABLE";

  private static final int CAP_SYS_ADMIN = 21;
  private static final int CAP_PERFMON = 38;
  private static final int CAP_BPF = 39;

  private BpfSupport() {}

  /** One user-facing line saying why BPF cannot be used, or empty when it probably can. */
  public static Optional<String> unavailableReason() {
    String disabled = System.getenv(DISABLE_ENV);
    if (disabled != null && !disabled.isEmpty()) {
      return Optional.of("BPF disabled by " + DISABLE_ENV);
    }
    long caps = effectiveCapabilities();
    // CAP_SYS_ADMIN alone also allows BPF and perf: what root had before 5.8 split them out.
    if (!has(caps, CAP_SYS_ADMIN) && !(has(caps, CAP_BPF) && has(caps, CAP_PERFMON))) {
      return Optional.of("BPF needs root or CAP_BPF and CAP_PERFMON: run polystack as root");
    }
    if (!Files.exists(Path.of("/sys/kernel/btf/vmlinux"))) {
      return Optional.of("the kernel has no BTF (/sys/kernel/btf/vmlinux is missing): BPF"
          + " capture needs a kernel built with CONFIG_DEBUG_INFO_BTF");
    }
    if (Bpf.loadFailure().isPresent()) {
      return Optional.of(Bpf.INSTALL_HINT);
    }
    if (lockdown().contains("[confidentiality]")) {
      return Optional.of("kernel lockdown (confidentiality) forbids BPF reads of process"
          + " memory: boot without lockdown=confidentiality to use BPF");
    }
    return Optional.empty();
  }

  /** CapEff from /proc/self/status; 0 (nothing) if it cannot be read. */
  static long effectiveCapabilities() {
    try {
      for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
        if (line.startsWith("CapEff:")) {
          return Long.parseUnsignedLong(line.substring(7).strip(), 16);
        }
      }
    } catch (IOException | NumberFormatException e) {
      // Treated as no capabilities: the line then says what to do.
    }
    return 0;
  }

  private static boolean has(long caps, int cap) {
    return (caps & (1L << cap)) != 0;
  }

  private static String lockdown() {
    try {
      return Files.readString(Path.of("/sys/kernel/security/lockdown"));
    } catch (IOException e) {
      return ""; // no securityfs or no lockdown LSM: not locked down
    }
  }
}
