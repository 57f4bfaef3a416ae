package dev.polystack.host.probes;

import dev.polystack.host.bpf.BpfLoadException;
import dev.polystack.host.bpf.VdsoTrace;
import dev.polystack.host.launch.Launcher;
import dev.polystack.host.proc.ProcFs;
import dev.polystack.plugin.api.CallRecord;
import dev.polystack.plugin.api.ProbePlugin;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFileAttributes;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Whether this machine's hardware breakpoints raise stray SIGTRAPs (a debug exception whose DR6
 * reads 0, which the kernel answers with SIGTRAP; docs/vdso.md, "Stray SIGTRAPs"), as far as this
 * boot has shown: a start-up self-test (a short bpf-backend session on {@code dd}, which calls
 * clock_gettime at every block with {@code status=progress}) plus what every later bpf session
 * saw, kept per boot in a small file. The bpf backend is the default only while this boot has
 * shown none.
 */
public final class BreakpointCheck {
  /** What this boot has shown: breakpoint-traced calls, and stray SIGTRAPs among them. */
  public record Evidence(long calls, long strays) {
    public Evidence {
      if (calls < 0 || strays < 0) {
        throw new IllegalArgumentException("negative counts");
      }
    }

    public boolean affected() {
      return strays > 0;
    }

    Evidence plus(long moreCalls, long moreStrays) {
      return new Evidence(saturated(calls, moreCalls), saturated(strays, moreStrays));
    }

    private static long saturated(long a, long b) {
      long s = a + Math.max(0, b);
      return s < 0 ? Long.MAX_VALUE : s;
    }
  }

  /** The self-test's length: long enough for tens of thousands of breakpoint hits. */
  static final long SELF_TEST_NANOS = 2_000_000_000L;
  static final List<String> SELF_TEST_COMMAND =
      List.of("dd", "if=/dev/zero", "of=/dev/null", "bs=1", "status=progress");
  private static final int SIGTRAP = 5;
  private static final int MAX_FILE_BYTES = 256;
  private static final Pattern LINE =
      Pattern.compile("boot_id=([0-9a-f-]{36}) calls=(\\d{1,18}) strays=(\\d{1,18})\n?");

  private final Path directory;
  private final String bootId;

  BreakpointCheck(Path directory, String bootId) {
    this.directory = directory;
    this.bootId = bootId;
  }

  /**
   * The check of this machine: the record lives in {@code /run/polystack} (root) or
   * {@code $XDG_RUNTIME_DIR/polystack}, both emptied at boot; the boot id keeps an old one from
   * counting.
   */
  public static BreakpointCheck system() {
    String boot;
    try {
      boot = Files.readString(Path.of("/proc/sys/kernel/random/boot_id")).trim();
    } catch (IOException e) {
      boot = "";
    }
    String runtime = System.getenv("XDG_RUNTIME_DIR");
    Path dir = Files.isWritable(Path.of("/run")) || runtime == null || runtime.isEmpty()
        ? Path.of("/run/polystack") : Path.of(runtime, "polystack");
    return new BreakpointCheck(dir, boot);
  }

  Path file() {
    return directory.resolve("vdso-breakpoints");
  }

  /** This boot's evidence so far, if any was kept (an unreadable or foreign record is none). */
  public Optional<Evidence> known() {
    Path f = file();
    try {
      if (!trusted(f, false)) {
        return Optional.empty();
      }
      byte[] raw;
      try (var in = Files.newInputStream(f, LinkOption.NOFOLLOW_LINKS)) {
        raw = in.readNBytes(MAX_FILE_BYTES + 1);
      }
      if (raw.length > MAX_FILE_BYTES) {
        return Optional.empty();
      }
      Matcher m = LINE.matcher(new String(raw, StandardCharsets.US_ASCII));
      if (!m.matches() || !m.group(1).equals(bootId)) {
        return Optional.empty();
      }
      return Optional.of(new Evidence(Long.parseLong(m.group(2)), Long.parseLong(m.group(3))));
    } catch (IOException | NumberFormatException e) {
      return Optional.empty();
    }
  }

  /** Adds a session's traced calls and stray SIGTRAPs to this boot's evidence. */
  public Evidence record(long calls, long strays) {
    Evidence e = known().orElse(new Evidence(0, 0)).plus(calls, strays);
    write(e);
    return e;
  }

  /**
   * Runs the self-test: {@code dd} launched under the bpf backend for two seconds. A stray
   * SIGTRAP shows in the kernel's count ({@code sigtrap_delivered}) and usually as dd's death.
   */
  public Evidence selfTest(ProbePlugin plugin) throws ProbeException {
    VdsoTrace bpf;
    try {
      bpf = VdsoTrace.open(BpfProbeBackend.RING_BYTES, BpfProbeBackend.PENDING);
    } catch (BpfLoadException e) {
      throw new ProbeException("the breakpoint self-test cannot load its BPF program: "
          + e.getMessage());
    }
    TraceSession.Options options = new TraceSession.Options(List.of("clock_gettime"),
        TraceSession.Backend.BPF, Set.of(), false, 0, 0, false, SELF_TEST_NANOS);
    TraceSession session = new TraceSession(ProcFs.system(), plugin, options, DISCARD, bpf);
    TraceSession.Result r = session.launch(Launcher.command(SELF_TEST_COMMAND)
        .stdin(Path.of("/dev/null")).stdout(Path.of("/dev/null")).stderr(Path.of("/dev/null")),
        SELF_TEST_COMMAND, () -> false);
    long strays = r.counters().getOrDefault("sigtrap_delivered", 0L);
    if (strays == 0 && r.targetExit() != null && r.targetExit().killed()
        && r.targetExit().termSignal() == SIGTRAP) {
      strays = 1;
    }
    return record(r.stats().session().calls(), strays);
  }

  private void write(Evidence e) {
    try {
      if (!Files.exists(directory, LinkOption.NOFOLLOW_LINKS)) {
        Files.createDirectories(directory.getParent());
        Files.createDirectory(directory,
            PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
      }
      if (!trusted(directory, true)) {
        return; // somebody else's directory: keep nothing rather than write through it
      }
      Path tmp = Files.createTempFile(directory, "vdso-breakpoints", ".tmp");
      Files.writeString(tmp, "boot_id=" + bootId + " calls=" + e.calls() + " strays="
          + e.strays() + "\n", StandardCharsets.US_ASCII);
      try {
        Files.move(tmp, file(), StandardCopyOption.ATOMIC_MOVE,
            StandardCopyOption.REPLACE_EXISTING);
      } catch (AtomicMoveNotSupportedException ex) {
        Files.deleteIfExists(tmp);
      }
    } catch (IOException | UnsupportedOperationException ex) {
      // The record is an optimisation: without it, the next session tests again.
    }
  }

  /** Ours (same owner as this process), not a link, and not writable by anyone else. */
  private static boolean trusted(Path p, boolean directory) throws IOException {
    if (!Files.exists(p, LinkOption.NOFOLLOW_LINKS)) {
      return false;
    }
    PosixFileAttributes a = Files.readAttributes(p, PosixFileAttributes.class,
        LinkOption.NOFOLLOW_LINKS);
    boolean kind = directory ? a.isDirectory() : a.isRegularFile();
    String me = System.getProperty("user.name");
    return kind && a.owner().getName().equals(me)
        && !a.permissions().contains(java.nio.file.attribute.PosixFilePermission.GROUP_WRITE)
        && !a.permissions().contains(java.nio.file.attribute.PosixFilePermission.OTHERS_WRITE);
  }

  private static final TraceSession.Sink DISCARD = new TraceSession.Sink() {
    @Override
    public void plan(ResolvedPlan plan) {}

    @Override
    public void call(long seq, CallRecord record, long realtimeNanos) {}

    @Override
    public void flush() {}
  };
}
