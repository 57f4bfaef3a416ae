package dev.polystack.host.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/**
 * Issue 29: the out-of-memory line blamed "very large or crafted binaries" whatever was held;
 * it says what polystack was doing, from the first polystack frame of the failed allocation.
 */
class OutOfMemoryLineTest {

  private static OutOfMemoryError at(String... classes) {
    OutOfMemoryError e = new OutOfMemoryError("Java heap space");
    StackTraceElement[] frames = new StackTraceElement[classes.length];
    for (int i = 0; i < classes.length; i++) {
      frames[i] = new StackTraceElement(classes[i], "m", null, -1);
    }
    e.setStackTrace(frames);
    return e;
  }

  @Test
  void namesWhatWasHeld() {
    assertEquals("reading /proc (process list, command lines, memory maps)",
        Main.holding(at("java.util.Arrays", "dev.polystack.host.proc.ProcessList")));
    assertEquals("reading the target's binaries (symbols, unwind tables)",
        Main.holding(at("java.util.ArrayList", "dev.polystack.host.elf.SymbolTable")));
    assertEquals("holding the run's samples (a long --duration at a high --rate, or deep"
        + " stacks)", Main.holding(at("dev.polystack.host.session.SampleStore")));
    assertEquals("in RecordCommand.m",
        Main.holding(at("dev.polystack.host.cli.RecordCommand")));
    assertEquals("in the Java runtime (no polystack frame on the failing allocation's stack)",
        Main.holding(at("java.lang.String")));
  }

  @Test
  void oneLineWithTheLimitAndTheRemedy() {
    String line = Main.outOfMemory(at("dev.polystack.host.proc.ProcessList"));
    assertTrue(line.matches("polystack: out of memory: the Java heap limit of \\d+ MiB was"
        + " reached while reading /proc \\(process list, command lines, memory maps\\); raise"
        + " it with POLYSTACK_JAVA_OPTS=-Xmx4g"), line);
  }
}
