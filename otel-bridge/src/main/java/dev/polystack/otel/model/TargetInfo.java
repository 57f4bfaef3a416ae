package dev.polystack.otel.model;

import java.util.List;
import java.util.Objects;

/**
 * The profiled process.
 *
 * @param pid process id
 * @param executablePath path of /proc/PID/exe, or empty if unknown
 * @param commandLine the arguments, first is the program
 */
public record TargetInfo(int pid, String executablePath, List<String> commandLine) {
  public TargetInfo {
    Objects.requireNonNull(executablePath, "executablePath");
    commandLine = List.copyOf(commandLine);
  }

  /** Base name of the executable, for output file names and service names. */
  public String executableName() {
    String p = executablePath.isEmpty() && !commandLine.isEmpty() ? commandLine.get(0)
        : executablePath;
    int slash = p.lastIndexOf('/');
    String name = slash < 0 ? p : p.substring(slash + 1);
    return name.isEmpty() ? "pid" + pid : name;
  }
}
