package dev.polystack.host.cli;

import com.google.inject.Inject;
import dev.polystack.host.output.OutputException;
import dev.polystack.host.output.OutputFile;
import dev.polystack.host.output.Outputs;
import dev.polystack.host.plugins.PluginGuard;
import dev.polystack.host.plugins.PluginLoader;
import dev.polystack.host.proc.ProcFs;
import dev.polystack.host.sampling.SamplingException;
import dev.polystack.host.session.SnapshotSession;
import dev.polystack.host.snapshot.Snapshot;
import dev.polystack.host.snapshot.SnapshotException;
import dev.polystack.host.snapshot.SnapshotFile;
import dev.polystack.host.snapshot.SnapshotModules;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.Locale;
import java.util.zip.GZIPOutputStream;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParentCommand;

/** {@code polystack snapshot}: a dump whose memory reads are recorded for offline replay. */
@Command(
    name = "snapshot",
    mixinStandardHelpOptions = true,
    description = "Stop every thread once like dump, record registers, the memory the walk"
        + " read, the memory map and module identities into FILE; print the stacks seen.")
final class SnapshotCommand implements Runnable {

  @Mixin StoppedTarget target;

  @Option(names = {"-o", "--output"}, paramLabel = "FILE", required = true,
      description = "Snapshot file to write (raw target memory: mode 0600, under sudo owned by"
          + " the invoking user; an existing file is replaced, a symbolic link refused).")
  Path output;

  @Option(names = "--embed-modules", paramLabel = "WHICH", arity = "0..1",
      fallbackValue = "needed",
      description = "Embed module files (compressed): 'needed' (those frames and plug-ins used;"
          + " the default when given without a value) or 'all'. Otherwise modules are"
          + " referenced by build id, path, size and SHA-256.")
  String embed;

  @Option(names = "--module-store", paramLabel = "DIR",
      description = "Also write every needed module as DIR/<sha256>.gz (for analyze --modules);"
          + " DIR is created 0700, files are 0600.")
  Path moduleStore;

  @Option(names = "--json", description = "Print the stacks as one JSON document.")
  boolean json;


  @ParentCommand PolystackCommand parent;

  private final PluginLoader loader;
  private final PluginGuard guard;
  private final Console console;
  private final Outputs outputs;

  @Inject
  SnapshotCommand(PluginLoader loader, PluginGuard guard, Console console, Outputs outputs) {
    this.loader = loader;
    this.guard = guard;
    this.console = console;
    this.outputs = outputs;
  }

  @Override
  public void run() {
    target.validate();
    SnapshotSession.Embed mode = embedMode();
    // Created (hidden) before the target is stopped: an unwritable place fails first.
    try (OutputFile file = outputs.replaceAtEnd(output, "--output")) {
      Path store = moduleStore == null ? null : outputs.directory(moduleStore, "--module-store");
      snapshot(mode, file, store);
    } catch (OutputException e) {
      throw OutputErrors.toCli(e);
    }
  }

  private void snapshot(SnapshotSession.Embed mode, OutputFile file, Path store)
      throws OutputException {
    int pid = target.resolve(ProcFs.system(), console);
    var registry = PolystackCommand.loadPlugins(loader, parent.pluginPath, console);
    SnapshotSession.Result result;
    try {
      result = new SnapshotSession(ProcFs.system(), registry, guard, console::warn)
          .record(pid, target.maxDepth, mode, DumpFormat::text);
    } catch (SamplingException e) {
      throw new CommandFailedException(e.getMessage());
    }
    Snapshot s = result.snapshot();
    try {
      SnapshotFile.write(s, file.stream());
    } catch (IOException e) {
      throw new CommandFailedException("cannot write " + output + ": " + OutputFile.reason(e)
          + "; choose another --output");
    } catch (SnapshotException e) {
      throw new CommandFailedException(e.getMessage());
    }
    file.commit();
    if (store != null) {
      try {
        store(s, store);
      } catch (SnapshotException e) {
        throw new CommandFailedException(e.getMessage());
      }
    }
    DumpFormat.print(result.dump(), json, console);
    long memory = s.processMemory().size()
        + s.threads().stream().mapToLong(t -> t.memory().size()).sum();
    long embedded = s.modules().stream().filter(Snapshot.ModuleRef::embedded).count();
    console.err().println("snapshot of process " + pid + " written to " + output + ": "
        + s.threads().size() + " threads, " + memory + " bytes of memory, " + embedded + " of "
        + s.modules().size() + " modules embedded");
    console.err().flush();
  }

  private SnapshotSession.Embed embedMode() {
    if (embed == null) {
      return SnapshotSession.Embed.NONE;
    }
    return switch (embed.toLowerCase(Locale.ROOT)) {
      case "needed" -> SnapshotSession.Embed.NEEDED;
      case "all" -> SnapshotSession.Embed.ALL;
      default -> throw new UsageException("--embed-modules takes 'needed' or 'all', got '"
          + embed + "'");
    };
  }

  /**
   * Writes needed modules to the content-addressed store; an existing regular file of that
   * name is kept (same name, same SHA-256), anything else at the name is refused.
   */
  private void store(Snapshot s, Path store) throws SnapshotException, OutputException {
    for (Snapshot.ModuleRef m : s.modules()) {
      Path file = store.resolve(m.sha256() + ".gz");
      if (!m.needed() || Files.isRegularFile(file, LinkOption.NOFOLLOW_LINKS)) {
        continue;
      }
      byte[] bytes;
      try {
        bytes = m.bytes() != null ? m.bytes() : Files.readAllBytes(Path.of(m.path()));
      } catch (IOException e) {
        throw new SnapshotException("cannot read " + m.path() + " for the module store: "
            + OutputFile.reason(e), e);
      }
      if (!SnapshotModules.sha256(bytes).equals(m.sha256())) {
        throw new SnapshotException(m.path() + " changed on disk while recording; not stored");
      }
      try (OutputFile out = outputs.replaceAtEnd(file, "--module-store")) {
        try (GZIPOutputStream gzip = new GZIPOutputStream(out.stream())) {
          gzip.write(bytes);
        } catch (IOException e) {
          throw new SnapshotException("cannot write module store " + store + ": "
              + OutputFile.reason(e), e);
        }
        out.commit();
      }
    }
  }
}
