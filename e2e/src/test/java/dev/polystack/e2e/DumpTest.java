package dev.polystack.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code polystack dump --pid} on live workloads: one snapshot, then the target runs on. */
class DumpTest {
  /** Names glibc versions give the read(2) wrapper. */
  private static final Set<String> READ_WRAPPERS =
      Set.of("read", "__read", "__libc_read", "__GI___libc_read", "__GI___read");

  @TempDir Path dir;

  @Test
  void aThreadBlockedInReadShowsTheLibcWrapperAboveItsCallersAndKeepsReading() throws Exception {
    try (Target target = Target.start(Workloads.binary("block_read"))) {
      target.awaitOutput("ready", 10_000);
      awaitSleeping(target);
      String pid = Integer.toString(target.pid());

      var text = Distribution.run("dump", "--pid", pid);

      assertEquals(0, text.exitCode(), text.stderr());
      assertEquals("", text.stderr());
      List<String> lines = text.stdout().lines().toList();
      assertEquals("Process " + pid, lines.get(0), text.stdout());
      int header = lines.indexOf("Thread " + pid + " \"block_read\" (sleeping)");
      assertTrue(header > 0, text.stdout());
      List<String> frames = new ArrayList<>();
      for (int i = header + 1; i < lines.size() && lines.get(i).startsWith("    "); i++) {
        frames.add(functionOf(lines.get(i)));
      }
      assertTrue(frames.size() >= 3, text.stdout());
      assertTrue(READ_WRAPPERS.contains(frames.get(0)), "innermost frame: " + text.stdout());
      assertEquals(List.of("wait_for_input", "main"), frames.subList(1, 3), text.stdout());
      assertTrue(frames.contains("__libc_start_main") && frames.get(frames.size() - 1)
          .equals("_start"), text.stdout());
      assertTrue(lines.get(header + 1).endsWith("(libc.so.6)"), lines.get(header + 1));

      Path json = dir.resolve("dump.json");
      var asJson = Distribution.run("dump", "--pid", pid, "--json");
      assertEquals(0, asJson.exitCode(), asJson.stderr());
      Files.writeString(json, asJson.stdout(), StandardCharsets.UTF_8);
      // Python's json module is the parser; print the leader's state and its function names.
      String parsed = Tools.python("""
          import json, sys
          d = json.load(sys.stdin)
          for t in d['threads']:
              if t['tid'] == d['pid']:
                  print(t['name'], t['state'], ' '.join(f['function'] for f in t['frames']))
          """, json);
      String[] fields = parsed.strip().split(" ");
      assertEquals("block_read", fields[0], parsed);
      assertEquals("sleeping", fields[1], parsed);
      assertTrue(READ_WRAPPERS.contains(fields[2]), parsed);
      assertEquals(List.of("wait_for_input", "main"), List.of(fields[3], fields[4]), parsed);

      // Both dumps interrupted the read; it must carry on and see later input and EOF.
      RecordAttachTest.assertReleasedAndRunning(target);
      target.stdin().write("hello\n".getBytes(StandardCharsets.UTF_8));
      target.stdin().close();
      assertEquals(0, target.awaitExit(10), target.output());
      assertTrue(target.output().contains("done 6"), target.output());
    }
  }

  @Test
  void everyThreadIsShownWithItsName() throws Exception {
    try (Target target = Target.start(Workloads.binary("two_threads"), "stdin")) {
      Awaits.threadsNamed(target.pid(), java.util.Set.of("worker-b", "stdin-watch"), 20_000);

      var result = Distribution.run("dump", "--pid", Integer.toString(target.pid()));

      assertEquals(0, result.exitCode(), result.stderr());
      String out = result.stdout();
      assertTrue(out.matches("(?s).*Thread " + target.pid() + " \"two_threads\" \\(running\\)\n"
          + "(    .*\n)*?    leaf_a .*\n    mid_a .*\n    top_a .*\n    main .*"), out);
      assertTrue(out.matches("(?s).*Thread \\d+ \"worker-b\" \\(running\\)\n"
          + "(    .*\n)*?    leaf_b .*\n    mid_b .*\n    top_b .*\n    worker .*"), out);
      assertTrue(out.matches("(?s).*Thread \\d+ \"stdin-watch\" \\(sleeping\\)\n"
          + "(    .*\n)*?    watch_stdin .*"), out);
      RecordAttachTest.assertReleasedAndRunning(target);
      RecordAttachTest.assertStillComputing(target);
      target.stdin().close();
      assertEquals(0, target.awaitExit(20), target.output());
    }
  }

  /** "    __read  (libc.so.6)" -> "__read". */
  private static String functionOf(String frameLine) {
    String s = frameLine.strip();
    int module = s.indexOf("  (");
    return module < 0 ? s : s.substring(0, module);
  }

  private static void awaitSleeping(Target target) throws Exception {
    long deadline = System.nanoTime() + 10_000_000_000L;
    while (!target.status().state().startsWith("S")) {
      assertFalse(System.nanoTime() > deadline, "never blocked: " + target.status());
      Thread.sleep(20);
    }
  }
}
