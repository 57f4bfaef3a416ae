package dev.polystack.host.cli;

import com.google.inject.Inject;
import dev.polystack.host.output.OutputException;
import dev.polystack.host.output.OutputFile;
import dev.polystack.host.output.Outputs;
import dev.polystack.host.plugins.PluginGuard;
import dev.polystack.host.plugins.PluginLoader;
import dev.polystack.host.session.ReplaySession;
import dev.polystack.host.snapshot.Snapshot;
import dev.polystack.host.snapshot.SnapshotException;
import dev.polystack.host.snapshot.SnapshotFile;
import dev.polystack.host.snapshot.SnapshotModules;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.ParentCommand;

/** {@code polystack analyze}: replays a snapshot offline and prints the stacks as dump would. */
@Command(
    name = "analyze",
    mixinStandardHelpOptions = true,
    description = "Replay a snapshot without the process (no ptrace, no root) and print its"
        + " stacks exactly as dump printed them; or --rebase a directory of snapshot cases.")
final class AnalyzeCommand implements Runnable {
  /** A case is NAME.psnap; its expected stacks are NAME.expected.txt beside it. */
  static final String CASE_SUFFIX = ".psnap";
  static final String EXPECTED_SUFFIX = ".expected.txt";

  @Parameters(paramLabel = "FILE", arity = "0..1", description = "The snapshot.")
  Path file;

  @Option(names = "--json", description = "One JSON document instead of text.")
  boolean json;

  @Option(names = "--modules", paramLabel = "DIR",
      description = "Directory of module files named <sha256> or <sha256>.gz (repeatable).")
  List<Path> moduleDirs = new ArrayList<>();

  @Option(names = "--check",
      description = "Fail unless the replay prints what the live walk printed.")
  boolean check;

  @Option(names = "--rebase", paramLabel = "DIR",
      description = "Regenerate NAME.expected.txt for every NAME.psnap in DIR (after an"
          + " intended change); DIR/modules is searched for modules.")
  Path rebase;

  @ParentCommand PolystackCommand parent;

  private final PluginLoader loader;
  private final PluginGuard guard;
  private final Console console;
  private final Outputs outputs;

  @Inject
  AnalyzeCommand(PluginLoader loader, PluginGuard guard, Console console, Outputs outputs) {
    this.loader = loader;
    this.guard = guard;
    this.console = console;
    // Expected stacks are test data for a source tree, not secrets: readable like the sources.
    this.outputs = outputs.readableByAll();
  }

  @Override
  public void run() {
    if ((file == null) == (rebase == null)) {
      throw new UsageException("give either a snapshot FILE or --rebase DIR");
    }
    var registry = PolystackCommand.loadPlugins(loader, parent.pluginPath, console);
    ReplaySession replay = new ReplaySession(registry, guard, console::warn);
    try {
      if (rebase != null) {
        rebase(replay);
        return;
      }
      if (!Files.isRegularFile(file)) {
        throw new UsageException(file + ": no such snapshot file");
      }
      Snapshot s = SnapshotFile.read(file);
      var result = replay.replay(s, SnapshotModules.resolve(s, moduleDirs), null);
      DumpFormat.print(result.dump(), json, console);
      if (check) {
        String replayed = DumpFormat.text(result.dump());
        if (!replayed.equals(s.liveStacks())) {
          throw new CommandFailedException("replay of " + file + " differs from the live walk"
              + firstDifference(s.liveStacks(), replayed));
        }
        console.err().println("replay matches the live walk");
        console.err().flush();
      }
    } catch (SnapshotException e) {
      throw new CommandFailedException(e.getMessage());
    }
  }

  private void rebase(ReplaySession replay) throws SnapshotException {
    List<Path> cases;
    try (Stream<Path> files = Files.list(rebase)) {
      cases = files.filter(f -> f.getFileName().toString().endsWith(CASE_SUFFIX)).sorted()
          .toList();
    } catch (IOException e) {
      throw new UsageException("--rebase " + rebase + ": " + e.getMessage());
    }
    List<Path> dirs = new ArrayList<>(moduleDirs);
    dirs.add(rebase.resolve("modules"));
    for (Path c : cases) {
      Snapshot s = SnapshotFile.read(c);
      String text = DumpFormat.text(replay.replay(s, SnapshotModules.resolve(s, dirs), null)
          .dump());
      String name = c.getFileName().toString();
      Path expected = c.resolveSibling(
          name.substring(0, name.length() - CASE_SUFFIX.length()) + EXPECTED_SUFFIX);
      try (OutputFile out = outputs.replaceAtEnd(expected, "--rebase")) {
        out.stream().write(text.getBytes(StandardCharsets.UTF_8));
        out.commit();
      } catch (IOException e) {
        throw new SnapshotException("cannot write " + expected + ": " + OutputFile.reason(e), e);
      } catch (OutputException e) {
        throw OutputErrors.toCli(e);
      }
      console.out().println("rebased " + expected);
    }
    console.out().flush();
  }

  static String firstDifference(String expected, String actual) {
    String[] a = expected.split("\n", -1);
    String[] b = actual.split("\n", -1);
    for (int i = 0; i < Math.max(a.length, b.length); i++) {
      String x = i < a.length ? a[i] : "<end>";
      String y = i < b.length ? b[i] : "<end>";
      if (!x.equals(y)) {
        return " at line " + (i + 1) + ": live '" + x.strip() + "', replay '" + y.strip() + "'";
      }
    }
    return "";
  }
}
