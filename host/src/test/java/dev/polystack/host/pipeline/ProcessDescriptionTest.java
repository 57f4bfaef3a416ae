package dev.polystack.host.pipeline;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;

import dev.polystack.otel.model.TargetInfo;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import org.junit.jupiter.api.Test;

class ProcessDescriptionTest {
  private static final Function<TargetInfo, Map<String, Object>> RESOURCE = info -> Map.of(
      "process.pid", (long) info.pid(),
      "process.executable.name", info.executablePath().isEmpty() ? "pid" + info.pid()
          : info.executablePath().substring(info.executablePath().lastIndexOf('/') + 1));

  @Test
  void oneReadMidExecIsDescribedAgainWithItsResource() {
    ProcessDescription midExec = ProcessDescription.of(new TargetInfo(4242, "", List.of()),
        RESOURCE);
    assertEquals("pid4242", midExec.resource().get("process.executable.name"));

    ProcessDescription later = midExec.completed(
        () -> new TargetInfo(4242, "/usr/bin/luajit", List.of("luajit", "busy.lua")), RESOURCE);

    assertEquals("/usr/bin/luajit", later.info().executablePath());
    assertEquals("luajit", later.resource().get("process.executable.name"),
        "the resource names the program, not the pid it had mid-exec");
  }

  @Test
  void oneThatNamesItsProgramIsNotReadAgain() {
    AtomicInteger reads = new AtomicInteger();
    ProcessDescription known = ProcessDescription.of(
        new TargetInfo(7, "/usr/sbin/nginx", List.of("nginx")), RESOURCE);

    ProcessDescription same = known.completed(() -> {
      reads.incrementAndGet();
      return new TargetInfo(7, "/other", List.of());
    }, RESOURCE);

    assertSame(known, same);
    assertEquals(0, reads.get());
  }
}
