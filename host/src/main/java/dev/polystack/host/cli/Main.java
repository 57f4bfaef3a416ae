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
        err.println(outOfMemory());
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
      err.println(outOfMemory());
      exit = ExitCodes.FAILURE;
    }
    out.flush();
    err.flush();
    System.exit(exit);
  }

  /** The heap limit (launcher's -Xmx, see docs/reliability.md) was reached. */
  static String outOfMemory() {
    return "polystack: out of memory: the Java heap limit of "
        + (Runtime.getRuntime().maxMemory() >> 20) + " MiB was reached (very large or crafted"
        + " binaries in the target); raise it with POLYSTACK_JAVA_OPTS=-Xmx4g";
  }

  /** Runs one command line with the given streams and returns the exit code. */
  public static int run(String[] args, PrintWriter out, PrintWriter err) {
    var injector = Guice.createInjector(new HostModule(new Console(out, err)));
    return injector.getInstance(CommandLineRunner.class).run(args);
  }
}
