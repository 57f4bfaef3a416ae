package dev.polystack.host.cli;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

/**
 * The set-up {@code polystack demo} does for itself: the system packages it needs, installed
 * with apt-get when polystack runs as root on Debian or Ubuntu, named with the exact command
 * elsewhere. Whether a package is installed is the package manager's answer (dpkg-query), not
 * only what PATH shows: a luajit package installed outside PATH is reported, not reinstalled.
 */
final class DemoSetup {

  /** A system package the demo uses. */
  record Need(String debianPackage, String otherPackage, String purpose) {
    Need {
      Objects.requireNonNull(debianPackage, "debianPackage");
      Objects.requireNonNull(otherPackage, "otherPackage");
      Objects.requireNonNull(purpose, "purpose");
    }
  }

  /** The luajit command runs the demo's program: without it there is no demo. */
  static final Need LUAJIT = new Need("luajit", "luajit", "runs the demo's Lua program");
  /** libbpf loads bpf mode's capture program; without it the demo samples in perf mode. */
  static final Need LIBBPF = new Need("libbpf1", "libbpf", "loads bpf mode's sampling program");

  /**
   * What was found on this machine.
   *
   * @param luajitInPath a luajit command is in PATH
   * @param libbpfPresent libbpf.so.1 is in a library directory
   * @param dpkgInstalled the Debian packages dpkg-query reports installed, of those asked; null
   *     when the host has no dpkg-query
   * @param root polystack runs with effective uid 0
   * @param aptHost Debian or Ubuntu (or derived) with /usr/bin/apt-get
   * @param osId /etc/os-release's ID and ID_LIKE words, for the install command elsewhere
   * @param path PATH, for the message when luajit is installed outside it
   */
  record Facts(boolean luajitInPath, boolean libbpfPresent, Set<String> dpkgInstalled,
      boolean root, boolean aptHost, List<String> osId, String path) {
    Facts {
      dpkgInstalled = dpkgInstalled == null ? null : Set.copyOf(dpkgInstalled);
      osId = List.copyOf(osId);
      path = path == null ? "" : path;
    }

    boolean present(Need need) {
      return need == LUAJIT ? luajitInPath : libbpfPresent;
    }

    boolean packageInstalled(Need need) {
      return dpkgInstalled != null && dpkgInstalled.contains(need.debianPackage());
    }
  }

  /** What to do: nothing, install packages, or stop with one line. */
  record Plan(List<Need> install, String refusal) {
    Plan {
      install = List.copyOf(install);
    }

    static final Plan NOTHING = new Plan(List.of(), null);

    boolean nothing() {
      return install.isEmpty() && refusal == null;
    }
  }

  private DemoSetup() {}

  /**
   * Decides from {@code facts} alone. A package dpkg already has is never installed again; a
   * missing one is installed only as root on an apt host; a missing luajit that cannot be
   * installed stops the demo with the command that installs it. A missing libbpf alone never
   * stops it: sampling says in its own line that it uses perf mode instead.
   */
  static Plan plan(Facts facts) {
    List<Need> missing = new ArrayList<>();
    for (Need need : List.of(LUAJIT, LIBBPF)) {
      if (!facts.present(need)) {
        missing.add(need);
      }
    }
    if (missing.isEmpty()) {
      return Plan.NOTHING;
    }
    if (!facts.luajitInPath() && facts.packageInstalled(LUAJIT)) {
      return new Plan(List.of(), "the demo runs a Lua program with luajit: the luajit package is"
          + " installed but no luajit is in PATH (" + facts.path() + "); add /usr/bin to PATH"
          + " and run 'polystack demo' again");
    }
    List<Need> installable = missing.stream().filter(n -> !facts.packageInstalled(n)).toList();
    if (facts.root() && facts.aptHost() && !installable.isEmpty()) {
      return new Plan(installable, null);
    }
    if (facts.luajitInPath()) {
      return Plan.NOTHING; // only libbpf is missing: sampling falls back and says so
    }
    return new Plan(List.of(), "the demo runs a Lua program with luajit, which is not"
        + " installed: " + installAdvice(facts, installable));
  }

  /**
   * The exact command for this host, as root, or what to look for where it is unknown; then
   * what to run next.
   */
  static String installAdvice(Facts facts, List<Need> needs) {
    String debian = needs.stream().map(Need::debianPackage).collect(Collectors.joining(" "));
    String other = needs.stream().map(Need::otherPackage).collect(Collectors.joining(" "));
    String command;
    if (facts.aptHost() || facts.osId().contains("debian") || facts.osId().contains("ubuntu")) {
      command = "apt-get install " + debian;
    } else if (facts.osId().contains("fedora") || facts.osId().contains("rhel")) {
      command = "dnf install " + other;
    } else if (facts.osId().contains("arch")) {
      command = "pacman -S " + other;
    } else if (facts.osId().contains("alpine")) {
      command = "apk add " + other;
    } else if (facts.osId().contains("suse")) {
      command = "zypper install " + other.replace("libbpf", "libbpf1");
    } else {
      return "install LuaJIT 2.1 (the luajit command)"
          + (needs.contains(LIBBPF) ? " and libbpf 1.x (libbpf.so.1)" : "")
          + " with this system's package manager and run 'polystack demo' again";
    }
    String them = needs.size() == 1 ? "it" : "them";
    if (facts.root()) {
      return "install " + them + " (" + command + ") and run 'polystack demo' again";
    }
    return "install " + them + " as root (sudo " + command + ") and run 'polystack demo' again"
        + (facts.aptHost() ? ", or run 'sudo polystack demo' to have " + them + " installed" : "");
  }

  /** The facts of this machine and process. */
  static Facts probe(String path) {
    boolean luajit = inPath("luajit", path);
    boolean libbpf = libbpfPresent();
    Set<String> dpkg = luajit && libbpf ? Set.of() : dpkgInstalled(List.of(
        LUAJIT.debianPackage(), LIBBPF.debianPackage()));
    List<String> os = osIds(Path.of("/etc/os-release"));
    boolean debianLike = os.contains("debian") || os.contains("ubuntu");
    boolean apt = debianLike && Files.isExecutable(Path.of(APT_GET));
    return new Facts(luajit, libbpf, dpkg, effectiveUid() == 0, apt, os, path);
  }

  /**
   * Does what {@code plan} says, telling the user in one line what it installs and why, with
   * apt-get's own lines as progress (on stderr: stdout stays the demo's results).
   */
  static void apply(Plan plan, Console console, String path) {
    if (plan.refusal() != null) {
      throw new CommandFailedException(plan.refusal());
    }
    if (plan.install().isEmpty()) {
      return;
    }
    List<String> names = plan.install().stream().map(Need::debianPackage).toList();
    String why = plan.install().stream().map(n -> n.debianPackage() + " (" + n.purpose() + ")")
        .collect(Collectors.joining(" and "));
    PrintWriter err = console.err();
    err.println(Console.PREFIX + "installing " + why + " with apt-get; its progress follows");
    err.flush();
    // Fresh machines and containers often have no package lists yet; stale ones 404.
    run(List.of(APT_GET, "-q", "update"), err, names);
    List<String> install = new ArrayList<>(List.of(APT_GET, "-q", "-y",
        "--no-install-recommends", "install"));
    install.addAll(names);
    run(install, err, names);
    err.println(Console.PREFIX + "installed " + String.join(" ", names));
    err.flush();
    if (plan.install().contains(LUAJIT) && !inPath("luajit", path)) {
      throw new CommandFailedException("luajit was installed but is not in PATH (" + path
          + "); add /usr/bin to PATH and run 'polystack demo' again");
    }
  }

  static final String APT_GET = "/usr/bin/apt-get";
  private static final String DPKG_QUERY = "/usr/bin/dpkg-query";

  private static void run(List<String> command, PrintWriter err, List<String> names) {
    ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true)
        .redirectInput(ProcessBuilder.Redirect.from(Path.of("/dev/null").toFile()));
    builder.environment().put("DEBIAN_FRONTEND", "noninteractive");
    String shown = "apt-get " + String.join(" ", command.subList(1, command.size()));
    String yourself = "install " + String.join(" ", names) + " yourself and run 'polystack"
        + " demo' again";
    try {
      Process p = builder.start();
      try (BufferedReader in = new BufferedReader(new InputStreamReader(p.getInputStream(),
          StandardCharsets.UTF_8))) {
        for (String line = in.readLine(); line != null; line = in.readLine()) {
          err.println("  " + line);
          err.flush();
        }
      }
      int exit = p.waitFor();
      if (exit != 0) {
        throw new CommandFailedException("'" + shown + "' failed (exit " + exit + ", its output"
            + " is above); " + yourself);
      }
    } catch (IOException e) {
      throw new CommandFailedException("cannot run " + command.get(0) + ": " + e.getMessage()
          + "; " + yourself);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new CommandFailedException("interrupted while installing " + String.join(" ", names));
    }
  }

  /** Whether {@code program} is an executable file in one of PATH's directories. */
  static boolean inPath(String program, String path) {
    try {
      RecordCommand.checkRunnable(program, path);
      return true;
    } catch (CommandFailedException e) {
      return false;
    }
  }

  /** The library directories of x86-64 Debian, Fedora and Arch, and LD_LIBRARY_PATH's. */
  private static final List<String> LIBRARY_DIRS = List.of("/lib/x86_64-linux-gnu",
      "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64", "/lib", "/usr/lib", "/usr/local/lib",
      "/usr/local/lib64");

  /**
   * Whether libbpf.so.1 is in a library directory. Looked up by file, not loaded: loading it
   * now would pin the failure for this JVM, and sampling must see a library installed here.
   */
  static boolean libbpfPresent() {
    List<String> dirs = new ArrayList<>(LIBRARY_DIRS);
    String extra = System.getenv("LD_LIBRARY_PATH");
    if (extra != null) {
      dirs.addAll(List.of(extra.split(":")));
    }
    return dirs.stream().filter(d -> !d.isEmpty())
        .anyMatch(d -> Files.exists(Path.of(d, "libbpf.so.1")));
  }

  /** The packages of {@code names} that dpkg reports installed; null without dpkg-query. */
  static Set<String> dpkgInstalled(List<String> names) {
    if (!Files.isExecutable(Path.of(DPKG_QUERY))) {
      return null;
    }
    List<String> command = new ArrayList<>(List.of(DPKG_QUERY, "-W", "-f",
        "${Package} ${Status}\\n"));
    command.addAll(names);
    try {
      // Exit 1 with "no packages found" for a name dpkg never knew: stdout still lists the rest.
      Process p = new ProcessBuilder(command)
          .redirectError(ProcessBuilder.Redirect.DISCARD)
          .redirectInput(ProcessBuilder.Redirect.from(Path.of("/dev/null").toFile())).start();
      String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      if (!p.waitFor(30, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        return null;
      }
      return parseDpkgStatus(out);
    } catch (IOException e) {
      return null;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return null;
    }
  }

  /** From "PACKAGE want ok state" lines: the packages whose state is "installed". */
  static Set<String> parseDpkgStatus(String out) {
    Set<String> installed = new TreeSet<>();
    for (String line : out.lines().toList()) {
      String[] f = line.strip().split("\\s+");
      if (f.length == 4 && f[2].equals("ok") && f[3].equals("installed")) {
        installed.add(f[0].replaceFirst(":.*$", "")); // "libbpf1:amd64" on multi-arch hosts
      }
    }
    return installed;
  }

  /** /etc/os-release's ID and ID_LIKE words, lower case; empty when it cannot be read. */
  static List<String> osIds(Path osRelease) {
    Map<String, String> fields = new LinkedHashMap<>();
    try {
      for (String line : Files.readAllLines(osRelease, StandardCharsets.UTF_8)) {
        int eq = line.indexOf('=');
        if (eq > 0) {
          fields.put(line.substring(0, eq).strip(),
              line.substring(eq + 1).strip().replace("\"", "").replace("'", ""));
        }
      }
    } catch (IOException e) {
      return List.of();
    }
    List<String> ids = new ArrayList<>();
    for (String key : List.of("ID", "ID_LIKE")) {
      String v = fields.get(key);
      if (v != null) {
        for (String word : v.toLowerCase(Locale.ROOT).split("\\s+")) {
          if (!word.isEmpty()) {
            ids.add(word);
          }
        }
      }
    }
    return ids;
  }

  /** The effective uid from /proc/self/status; -1 when it cannot be read. */
  static int effectiveUid() {
    try {
      for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
        if (line.startsWith("Uid:")) {
          return Integer.parseInt(line.substring(4).strip().split("\\s+")[1]);
        }
      }
    } catch (IOException | RuntimeException e) {
      return -1;
    }
    return -1;
  }
}
