package dev.polystack.host.cli;

import com.google.inject.Inject;
import com.google.inject.Injector;
import picocli.CommandLine;

/**
 * Parses and runs a command line with picocli, and turns every failure into one line on stderr
 * and the contract's exit code; a stack trace only with POLYSTACK_DEBUG=1.
 */
final class CommandLineRunner {
  private final Injector injector;
  private final Console console;

  @Inject
  CommandLineRunner(Injector injector, Console console) {
    this.injector = injector;
    this.console = console;
  }

  int run(String[] args) {
    CommandLine cli = new CommandLine(PolystackCommand.class, new GuiceFactory(injector));
    cli.setOut(console.helpOut());
    cli.setErr(console.helpErr());
    cli.setCaseInsensitiveEnumValuesAllowed(true);
    cli.setParameterExceptionHandler(this::onBadUsage);
    cli.setExecutionExceptionHandler(this::onFailure);
    int exit = cli.execute(args);
    console.reportRepeats();
    return exit;
  }

  private int onBadUsage(CommandLine.ParameterException e, String[] args) {
    console.reportRepeats(); // the failure stays the last line
    CommandLine command = e.getCommandLine();
    String name = command.getCommandName();
    String help = "polystack".equals(name) ? "polystack --help" : "polystack " + name + " --help";
    if (command.getParent() == null && e instanceof CommandLine.UnmatchedArgumentException u
        && !u.getUnmatched().isEmpty() && !u.getUnmatched().get(0).startsWith("-")) {
      // A word where a command belongs: say so, not picocli's "unmatched argument at index 0".
      console.error("unknown command '" + u.getUnmatched().get(0) + "'; the commands are "
          + String.join(", ", command.getSubcommands().keySet()) + " (see '" + help + "')");
      return ExitCodes.USAGE;
    }
    console.error(e.getMessage() + " (see '" + help + "')");
    return ExitCodes.USAGE;
  }

  private int onFailure(Exception e, CommandLine command, CommandLine.ParseResult parsed) {
    console.reportRepeats(); // the failure stays the last line
    if (e instanceof UsageException) {
      console.error(e.getMessage());
      return ExitCodes.USAGE;
    }
    if (e instanceof CommandFailedException) {
      console.error(e.getMessage());
    } else {
      console.error("internal error: " + e + "; rerun with POLYSTACK_DEBUG=1 and report it");
    }
    if ("1".equals(System.getenv("POLYSTACK_DEBUG"))) {
      e.printStackTrace(console.err());
    }
    return ExitCodes.FAILURE;
  }

  /** Lets picocli create commands through Guice so they get their collaborators injected. */
  private record GuiceFactory(Injector injector) implements CommandLine.IFactory {
    @Override
    public <K> K create(Class<K> type) throws Exception {
      if (type.getName().startsWith("dev.polystack.")) {
        return injector.getInstance(type);
      }
      return CommandLine.defaultFactory().create(type);
    }
  }
}
