package dev.polystack.host.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.polystack.otel.model.ModuleInfo;
import dev.polystack.otel.model.Recording;
import dev.polystack.otel.model.Sample;
import dev.polystack.otel.model.StackTrace;
import dev.polystack.otel.model.TargetInfo;
import dev.polystack.plugin.api.Frame;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class TopTableTest {
  /** 10 ms a period (100 Hz), so 100 periods are one second. */
  static final long PERIOD = 10_000_000L;

  static Frame lua(String name, String file, int line, int startLine) {
    return new Frame("luajit", 0, name, file, line, startLine, "", Map.of());
  }

  static Frame c(String name, String module) {
    return new Frame(Frame.NATIVE, 0x1000, name, "", 0, 0, module, Map.of());
  }

  /** A stack, leaf first. */
  static StackTrace stack(Frame... frames) {
    return new StackTrace(List.of(frames));
  }

  static Recording interval(List<Sample> samples) {
    return new Recording(new TargetInfo(42, "/usr/bin/luajit", List.of("luajit")), 0, 1,
        PERIOD, "bpf", List.of(new ModuleInfo(0x1000, 0x2000, 0, "/usr/lib/libm.so.6", "")),
        samples, Map.of());
  }

  static List<Sample> times(StackTrace stack, int n, int periodsEach) {
    List<Sample> out = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      out.add(new Sample(1, "main", i, stack, Map.of(), periodsEach));
    }
    return out;
  }

  static final Frame MAIN = lua("main chunk", "app.lua", 30, 0);
  static final Frame DRIVE = lua("drive", "app.lua", 20, 18);
  static final Frame HOT = lua("hot", "app.lua", 3, 1);
  static final Frame COLD = lua("cold", "app.lua", 9, 8);

  @Test
  void ownCountsTheLeafAndTotalCountsEveryFunctionOnTheStackOnce() {
    TopTable table = new TopTable(100);
    List<Sample> samples = new ArrayList<>();
    samples.addAll(times(stack(HOT, DRIVE, MAIN), 6, 1));
    // Recursion: drive twice on the stack still counts once in drive's total.
    samples.addAll(times(stack(COLD, DRIVE, lua("drive", "app.lua", 22, 18), MAIN), 3, 1));
    samples.addAll(times(stack(DRIVE, MAIN), 1, 1));
    table.add(interval(samples));

    List<TopTable.Row> rows = table.rows(TopTable.Sort.OWN, TopTable.Window.RUN);
    assertEquals(List.of("hot (app.lua:1)", "cold (app.lua:8)", "drive (app.lua:18)",
        "main chunk (app.lua)"), rows.stream().map(TopTable.Row::function).toList());
    assertEquals(new TopTable.Row("hot (app.lua:1)", 6, 6, 6, 6), rows.get(0));
    assertEquals(new TopTable.Row("drive (app.lua:18)", 1, 10, 1, 10), rows.get(2));
    assertEquals(new TopTable.Row("main chunk (app.lua)", 0, 10, 0, 10), rows.get(3));

    // By total: the callers first (most inclusive), ties broken by own time, then by name.
    assertEquals(List.of("drive (app.lua:18)", "main chunk (app.lua)", "hot (app.lua:1)",
        "cold (app.lua:8)"), table.rows(TopTable.Sort.TOTAL, TopTable.Window.RUN).stream()
        .map(TopTable.Row::function).toList());
  }

  @Test
  void timeIsPeriodsSoCarriedTicksCount() {
    TopTable table = new TopTable(100);
    List<Sample> samples = new ArrayList<>(times(stack(HOT, MAIN), 10, 3));
    samples.addAll(times(stack(COLD, MAIN), 10, 1));
    table.add(interval(samples));
    assertEquals(40, table.periodsRun());
    assertEquals(20, table.samplesRun());
    String text = table.render(TopTable.Sort.OWN, TopTable.Window.RUN, PERIOD, 10, 0);
    assertEquals(List.of(
        "   %Own*   %Total   OwnTime  TotalTime  Function",
        "  75.00%   75.00%     0.30s      0.30s  hot (app.lua:1)",
        "  25.00%   25.00%     0.10s      0.10s  cold (app.lua:8)",
        "   0.00%  100.00%     0.00s      0.40s  main chunk (app.lua)"), text.lines().toList());
  }

  @Test
  void percentagesFollowTheWindowAndTimesTheWholeRun() {
    TopTable table = new TopTable(100);
    table.add(interval(times(stack(HOT, MAIN), 90, 1)));
    table.add(interval(times(stack(COLD, MAIN), 10, 1)));
    // The latest interval ran cold only; hot has time in the run but none now.
    List<TopTable.Row> latest = table.rows(TopTable.Sort.OWN, TopTable.Window.LATEST);
    assertEquals(List.of("cold (app.lua:8)", "main chunk (app.lua)"),
        latest.stream().map(TopTable.Row::function).toList());
    assertEquals(10, table.periodsLatest());
    String now = table.render(TopTable.Sort.OWN, TopTable.Window.LATEST, PERIOD, 10, 0);
    assertTrue(now.contains(" 100.00%  100.00%     0.10s      0.10s  cold (app.lua:8)"), now);
    String run = table.render(TopTable.Sort.OWN, TopTable.Window.RUN, PERIOD, 10, 0);
    assertEquals("  90.00%   90.00%     0.90s      0.90s  hot (app.lua:1)",
        run.lines().toList().get(1), run);
  }

  @Test
  void theSortedColumnIsMarked() {
    TopTable table = new TopTable(100);
    table.add(interval(times(stack(HOT), 1, 1)));
    assertEquals("    %Own  %Total*   OwnTime  TotalTime  Function", table.render(
        TopTable.Sort.TOTAL, TopTable.Window.RUN, PERIOD, 10, 0).lines().findFirst().get());
    assertEquals(TopTable.Sort.TOTAL, TopTable.Sort.parse("total"));
    assertThrows(UsageException.class, () -> TopTable.Sort.parse("name"));
  }

  @Test
  void nativeFramesAreNamedWithTheirModuleAndTargetTextIsEscaped() {
    Recording r = interval(List.of());
    assertEquals("sqrt (libm.so.6)", TopTable.function(c("sqrt", "/usr/lib/libm.so.6"), r));
    // No module in the frame: the recording's mapping names it.
    assertEquals("[unknown] (libm.so.6)", TopTable.function(c("", ""), r));
    assertEquals("schedule (kernel)",
        TopTable.function(new Frame(Frame.KERNEL, 1, "schedule", "", 0, 0, "", Map.of()), r));
    assertEquals("[error: walk_failed]", TopTable.function(Frame.error("walk_failed"), r));
    String hostile = TopTable.function(lua("f\033[2J", "x\n.lua", 1, 1), r);
    assertEquals("f\\x1b[2J (x\\x0a.lua:1)", hostile);
    assertFalse(hostile.chars().anyMatch(ch -> ch < 0x20), hostile);
  }

  @Test
  void rowsAndWidthAreBoundedAndNoSampleIsDropped() {
    TopTable table = new TopTable(2);
    List<Sample> samples = new ArrayList<>();
    for (int i = 0; i < 5; i++) {
      samples.addAll(times(stack(lua("f" + i, "a.lua", 1, 1)), 5 - i, 1));
    }
    samples.addAll(times(stack(), 1, 1));
    table.add(interval(samples));
    // Two functions kept apart; the rest (f2..f4 and the empty stack) add up in one row.
    List<TopTable.Row> rows = table.rows(TopTable.Sort.OWN, TopTable.Window.RUN);
    assertEquals(List.of(TopTable.OTHER, "f0 (a.lua:1)", "f1 (a.lua:1)"),
        rows.stream().map(TopTable.Row::function).toList());
    assertEquals(16, rows.stream().mapToLong(TopTable.Row::ownRun).sum());

    String text = table.render(TopTable.Sort.OWN, TopTable.Window.RUN, PERIOD, 1, 30);
    List<String> lines = text.lines().toList();
    assertEquals(3, lines.size(), text);
    assertTrue(lines.stream().allMatch(l -> l.length() <= 30), text);
    assertEquals("(2 more functions)", lines.get(2));
  }

  @Test
  void anEmptyIntervalSaysSo() {
    TopTable table = new TopTable(10);
    table.add(interval(List.of()));
    assertEquals("(no samples in this interval)", table.render(TopTable.Sort.OWN,
        TopTable.Window.LATEST, PERIOD, 10, 0).lines().toList().get(1));
  }
}
