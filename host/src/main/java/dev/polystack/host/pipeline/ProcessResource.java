package dev.polystack.host.pipeline;

import dev.polystack.host.proc.ProcFs;
import dev.polystack.otel.model.TargetInfo;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The OTLP resource attributes of one profiled process, as the OpenTelemetry semantic
 * conventions name them: the process, its container when its cgroup names one, the host, and
 * the service the process's own SDK would report ({@code OTEL_SERVICE_NAME} in its environment,
 * else its executable name). Everything read from the process is bounded.
 */
final class ProcessResource {
  /** Bytes of /proc/PID/environ searched for OTEL_SERVICE_NAME. */
  static final int ENVIRON_BYTES = 64 << 10;
  /** Longest service name or command line kept. */
  static final int VALUE_CHARS = 1024;
  /** A 64-hex-digit container id in a cgroup path (docker, containerd, cri-o, podman). */
  private static final Pattern CONTAINER_ID =
      Pattern.compile("(?:^|[/-])([0-9a-f]{64})(?:\\.scope)?(?:/|$)");

  private final ProcFs proc;
  private final String hostName;
  private final String hostId;
  private final boolean commandLine;

  ProcessResource(ProcFs proc, String hostName, String hostId, boolean commandLine) {
    this.proc = proc;
    this.hostName = hostName;
    this.hostId = hostId;
    this.commandLine = commandLine;
  }

  /** This machine's host.name and host.id (/etc/machine-id; empty when unreadable). */
  static ProcessResource forThisHost(ProcFs proc, boolean commandLine) {
    return new ProcessResource(proc, read(Path.of("/proc/sys/kernel/hostname"), 256).strip(),
        read(Path.of("/etc/machine-id"), 64).strip(), commandLine);
  }

  Map<String, Object> of(TargetInfo info) {
    Map<String, Object> a = new LinkedHashMap<>();
    String service = serviceName(info.pid());
    a.put("service.name", service.isEmpty() ? info.executableName() : service);
    a.put("process.pid", (long) info.pid());
    a.put("process.executable.name", info.executableName());
    if (!info.executablePath().isEmpty()) {
      a.put("process.executable.path", info.executablePath());
    }
    if (commandLine && !info.commandLine().isEmpty()) {
      a.put("process.command_line", cap(String.join(" ", info.commandLine())));
    }
    String container = containerId(ProcessSelection.cgroupOf(proc, info.pid()));
    if (!container.isEmpty()) {
      a.put("container.id", container);
    }
    if (!hostName.isEmpty()) {
      a.put("host.name", hostName);
    }
    if (!hostId.isEmpty()) {
      a.put("host.id", hostId);
    }
    return a;
  }

  /** The container id a cgroup path names, or empty. */
  static String containerId(String cgroupPath) {
    Matcher m = CONTAINER_ID.matcher(cgroupPath);
    String id = "";
    while (m.find()) {
      id = m.group(1); // the innermost one
    }
    return id;
  }

  /** OTEL_SERVICE_NAME from the process's environment as it started, or empty. */
  private String serviceName(int pid) {
    Path environ = proc.root().resolve(Integer.toString(pid)).resolve("environ");
    byte[] bytes;
    try (InputStream in = Files.newInputStream(environ)) {
      bytes = in.readNBytes(ENVIRON_BYTES);
    } catch (IOException e) {
      return "";
    }
    String key = "OTEL_SERVICE_NAME=";
    for (String entry : new String(bytes, StandardCharsets.UTF_8).split("\0")) {
      if (entry.startsWith(key)) {
        return cap(entry.substring(key.length()).strip());
      }
    }
    return "";
  }

  private static String cap(String s) {
    return s.length() <= VALUE_CHARS ? s : s.substring(0, VALUE_CHARS);
  }

  private static String read(Path file, int max) {
    try (InputStream in = Files.newInputStream(file)) {
      return new String(in.readNBytes(max), StandardCharsets.UTF_8);
    } catch (IOException e) {
      return "";
    }
  }
}
