package dev.polystack.host.cli;

import com.google.inject.Guice;
import java.io.PrintWriter;
import java.nio.charset.Charset;

/** Entry point of the distribution: wires the host with Guice and runs the command line. */
public final class Main {
  private Main() {}

  public static void main(String[] args) {
    Charset charset = Charset.defaultCharset();
    PrintWriter out = new PrintWriter(System.out, true, charset);
    PrintWriter err = new PrintWriter(System.err, true, charset);
    Thread.setDefaultUncaughtExceptionHandler((thread, e) -> {
      if (e instanceof OutOfMemoryError) {
        err.println(outOfMemory(e));
      } else { // what the JVM prints without a handler
        err.print("Exception in thread \"" + thread.getName() + "\" ");
        e.printStackTrace(err);
      }
    });
    int exit;
    try {
      exit = run(args, out, err);
    } catch (OutOfMemoryError e) {
      // Reached only after every finally block on the way detached and disarmed the targets.
      err.println(outOfMemory(e));
      exit = ExitCodes.FAILURE;
    }
    out.flush();
    err.flush();
    System.exit(exit);
  }

  /**
   * The heap limit (launcher's -Xmx, see docs/reliability.md) was reached: says what polystack
   * was holding when it was, from where the allocation failed.
   */
  static String outOfMemory(Throwable e) {
    return "polystack: out of memory: the Java heap limit of "
        + (Runtime.getRuntime().maxMemory() >> 20) + " MiB was reached while " + holding(e)
        + "; raise it with POLYSTACK_JAVA_OPTS=-Xmx4g";
  }

  /** What the first polystack frame of {@code e}'s stack was doing, in the user's words. */
  static String holding(Throwable e) {
    for (StackTraceElement frame : e.getStackTrace()) {
      String c = frame.getClassName();
      if (!c.startsWith("dev.polystack.")) {
        continue;
      }
      for (String[] area : AREAS) {
        if (c.startsWith(area[0])) {
          return area[1];
        }
      }
      return "in " + c.substring(c.lastIndexOf('.') + 1) + "." + frame.getMethodName();
    }
    return "in the Java runtime (no polystack frame on the failing allocation's stack)";
  }

  /** Package prefixes, most specific first, and what their data is. */
  private static final String[][] AREAS = {
      {"dev.polystack.host.elf.", "reading the target's binaries (symbols, unwind tables)"},
      {"dev.polystack.host.unwind.", "reading the target's binaries (symbols, unwind tables)"},
      {"dev.polystack.host.modules.", "reading the target's binaries (symbols, unwind tables)"},
      {"dev.polystack.host.process.", "reading the target's binaries (symbols, unwind tables)"},
      {"dev.polystack.host.proc.", "reading /proc (process list, command lines, memory maps)"},
      {"dev.polystack.host.session.SampleStore", "holding the run's samples (a long --duration"
          + " at a high --rate, or deep stacks)"},
      {"dev.polystack.otel.", "writing the profile (all of the run's samples)"},
      {"dev.polystack.host.snapshot.", "reading or writing a snapshot"},
      {"dev.polystack.luajit.", "in the LuaJIT plug-in (reading the target's Lua state)"},
      {"dev.polystack.plugin.", "in a plug-in"},
  };

  /** Runs one command line with the given streams and returns the exit code. */
  public static int run(String[] args, PrintWriter out, PrintWriter err) {
    var injector = Guice.createInjector(new HostModule(new Console(out, err)));
    return injector.getInstance(CommandLineRunner.class).run(args);
  }
}
