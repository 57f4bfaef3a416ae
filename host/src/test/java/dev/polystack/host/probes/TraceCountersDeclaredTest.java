package dev.polystack.host.probes;

import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.polystack.host.bpf.VdsoTrace;
import dev.polystack.otel.counters.TraceCounters;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Every counter name a vDSO trace session can report is declared in TraceCounters: the probe
 * backends' and the session's (typed constants, and no literal left), the bpf trace program's
 * kernel counters, and the vDSO plug-in's call pairing's.
 */
class TraceCountersDeclaredTest {
  private static final Pattern LITERAL_COUNT =
      Pattern.compile("\\bcount\\(\\s*\"([a-z_]+)\"");
  private static final Pattern MERGED_LITERAL =
      Pattern.compile("\\bcounters\\.merge\\(\\s*\"([a-z_]+)\"");
  /** Activity, not counters: the backend skips them. */
  private static final Set<String> ACTIVITY = Set.of("entries", "returns", "records");

  @Test
  void everyKernelCounterOfTheTraceProgramIsDeclared() throws Exception {
    var field = VdsoTrace.class.getDeclaredField("COUNTERS");
    field.setAccessible(true);
    @SuppressWarnings("unchecked")
    List<String> keys = (List<String>) field.get(null);
    assertTrue(keys.size() >= 12, keys.toString());
    for (String key : keys) {
      if (!ACTIVITY.contains(key)) {
        assertTrue(TraceCounters.registry().declared(key).isPresent(), key + " is not declared");
      }
    }
  }

  @Test
  void everyLiteralInTheProbesAndThePairingIsDeclared() throws IOException {
    List<String> names = new ArrayList<>();
    names.addAll(matches(Path.of("src/main/java/dev/polystack/host/probes"), LITERAL_COUNT));
    List<String> pairing = new ArrayList<>();
    Path plugin = Path.of("..", "vdso-plugin", "src", "main", "java");
    pairing.addAll(matches(plugin, LITERAL_COUNT));
    pairing.addAll(matches(plugin, MERGED_LITERAL));
    assertTrue(pairing.size() >= 6, "the scan finds the pairing's counters: " + pairing);
    names.addAll(pairing);
    for (String name : names) {
      assertTrue(TraceCounters.registry().declared(name).isPresent(), name + " is counted but"
          + " not declared in TraceCounters");
    }
  }

  private static List<String> matches(Path dir, Pattern pattern) throws IOException {
    List<String> out = new ArrayList<>();
    try (Stream<Path> files = Files.walk(dir)) {
      for (Path f : files.filter(p -> p.toString().endsWith(".java")).toList()) {
        Matcher m = pattern.matcher(Files.readString(f));
        while (m.find()) {
          out.add(m.group(1));
        }
      }
    }
    return out;
  }
}
