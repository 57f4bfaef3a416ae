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
    int exit = run(args, out, err);
    out.flush();
    err.flush();
    System.exit(exit);
  }

  /** Runs one command line with the given streams and returns the exit code. */
  public static int run(String[] args, PrintWriter out, PrintWriter err) {
    var injector = Guice.createInjector(new HostModule(new Console(out, err)));
    return injector.getInstance(CommandLineRunner.class).run(args);
  }
}
