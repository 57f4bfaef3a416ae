package dev.polystack.host.cli;

import com.google.inject.Inject;
import dev.polystack.host.elf.ElfFile;
import dev.polystack.host.elf.ElfParseException;
import dev.polystack.host.inspect.Inspector;
import dev.polystack.host.inspect.ModuleReport;
import dev.polystack.host.memory.ProcessMemory;
import dev.polystack.host.modules.ElfModuleImage;
import dev.polystack.host.modules.ModuleOpenException;
import dev.polystack.host.modules.ModuleOpener;
import dev.polystack.host.plugins.PluginGuard;
import dev.polystack.host.plugins.PluginLoader;
import dev.polystack.host.proc.MappedFile;
import dev.polystack.host.proc.MappingKind;
import dev.polystack.host.proc.MemoryMapping;
import dev.polystack.host.proc.ProcFs;
import dev.polystack.host.proc.ProcReadException;
import dev.polystack.host.proc.ProcessMaps;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParentCommand;

/** {@code polystack inspect}: what each plug-in finds in a binary or in a running process. */
@Command(
    name = "inspect",
    mixinStandardHelpOptions = true,
    description = "Show what each plug-in finds in a binary or in the modules of a process:"
        + " runtime, evidence, code ranges and offsets with their provenance.")
final class InspectCommand implements Runnable {

  static final class Target {
    @Option(names = "--binary", paramLabel = "PATH", required = true,
        description = "An executable or shared library on disk.")
    Path binary;

    @Option(names = {"--pid", "-p"}, paramLabel = "PID", required = true,
        description = "A running process: every mapped module and its vDSO.")
    Integer pid;
  }

  @ArgGroup(exclusive = true, multiplicity = "1")
  Target target;

  @Option(names = "--all", description = "With --pid, also list modules no plug-in recognised.")
  boolean all;

  @Option(names = "--json", description = "One JSON object per module, one per line.")
  boolean json;

  @Option(names = "--validate",
      description = "With --pid, also check offsets against the running process: takes up to"
          + " 50 snapshots, stopping its threads as briefly as 'dump' does, and ends with a"
          + " verdict per runtime (exit 1 if one is not confirmed).")
  boolean validate;

  @ParentCommand PolystackCommand parent;

  /** Snapshots --validate takes at most (it stops once every runtime is confirmed). */
  private static final int SNAPSHOTS = 50;
  /** What --validate confirmed, by module; filled by {@link #withValidated}. */
  private java.util.Map<String, List<dev.polystack.plugin.api.DiscoveredOffset>> validated =
      java.util.Map.of();

  private final PluginLoader loader;
  private final PluginGuard guard;
  private final Console console;

  @Inject
  InspectCommand(PluginLoader loader, PluginGuard guard, Console console) {
    this.loader = loader;
    this.guard = guard;
    this.console = console;
  }

  @Override
  public void run() {
    var registry = PolystackCommand.loadPlugins(loader, parent.pluginPath, console);
    Inspector inspector = new Inspector(registry, guard);
    List<ModuleReport> reports = target.binary != null
        ? List.of(inspectBinary(inspector, target.binary))
        : inspectProcess(inspector, target.pid);
    PrintWriter out = console.out();
    for (ModuleReport r : reports) {
      if (json) {
        out.println(InspectFormat.json(r));
      } else if (all || !r.findings().isEmpty() || target.binary != null) {
        InspectFormat.text(r, out);
      }
    }
    if (!json && target.pid != null && reports.stream().allMatch(r -> r.findings().isEmpty())) {
      out.println("no plug-in recognised any of the " + reports.size() + " modules of process "
          + target.pid + " (use --all to list them)");
    }
    out.flush();
    if (validate && target.pid != null) {
      verdict(reports, out);
    }
  }

  /**
   * --validate's verdict, one line per recognised runtime: confirmed against the live process
   * (the offsets that agreed), or not; any not confirmed makes the run fail (exit 1).
   */
  private void verdict(List<ModuleReport> reports, PrintWriter out) {
    int recognised = 0;
    List<String> unconfirmed = new ArrayList<>();
    for (ModuleReport r : reports) {
      for (ModuleReport.Finding f : r.findings()) {
        if (f.status() != ModuleReport.Status.SUPPORTED || r.module().equals("[vdso]")) {
          continue;
        }
        recognised++;
        List<String> confirmed = validated.getOrDefault(r.module(), List.of()).stream()
            .filter(o -> !o.detail().startsWith("not validated"))
            .map(dev.polystack.plugin.api.DiscoveredOffset::name).toList();
        if (confirmed.isEmpty()) {
          unconfirmed.add(r.module() + " (" + f.plugin() + ")");
          out.println("validate: NOT CONFIRMED: " + r.module() + " (" + f.plugin() + "): no"
              + " offset agreed with process " + target.pid + " in " + SNAPSHOTS + " snapshots");
        } else {
          out.println("validate: confirmed: " + r.module() + " (" + f.plugin() + "): "
              + String.join(", ", confirmed) + " agreed with process " + target.pid);
        }
      }
    }
    if (recognised == 0) {
      out.println("validate: nothing to validate: no plug-in recognised a runtime in process "
          + target.pid);
    }
    out.flush();
    if (!unconfirmed.isEmpty()) {
      throw new CommandFailedException("--validate: " + unconfirmed.size() + " of " + recognised
          + " runtimes not confirmed against process " + target.pid + " ("
          + String.join(", ", unconfirmed) + "); their offsets above come from the binary"
          + " alone: check again while the runtime runs code");
    }
  }

  private ModuleReport inspectBinary(Inspector inspector, Path path) {
    if (!Files.exists(path)) {
      throw new UsageException("--binary " + path + ": no such file");
    }
    if (!Files.isRegularFile(path)) {
      throw new UsageException("--binary " + path + ": not a regular file");
    }
    ElfFile elf;
    try {
      elf = ElfFile.open(path);
    } catch (ElfParseException e) {
      throw new CommandFailedException("cannot inspect " + path + ": " + e.getMessage()
          + "; pass an ELF executable or shared library");
    }
    return inspector.inspect(new ElfModuleImage(elf, path.toString()), 0);
  }

  private List<ModuleReport> inspectProcess(Inspector inspector, int pid) {
    if (pid <= 0) {
      throw new UsageException("--pid " + pid + ": a process id is a positive number");
    }
    ProcessMaps maps;
    try {
      maps = ProcFs.system().forPid(pid).maps();
    } catch (ProcReadException e) {
      throw new CommandFailedException("cannot inspect process " + pid + ": " + e.getMessage());
    }
    ModuleOpener opener = new ModuleOpener();
    List<ModuleReport> reports = new ArrayList<>();
    for (MappedFile m : maps.modules()) {
      if (m.executableMappings().isEmpty()) {
        continue;
      }
      try {
        ElfFile elf = opener.open(pid, m);
        reports.add(inspector.inspect(new ElfModuleImage(elf, m.path()), bias(m, elf)));
      } catch (ModuleOpenException e) {
        console.warn("skipped " + m.path() + ": " + e.getMessage());
      }
    }
    if (validate) {
      reports = withValidated(reports, pid);
    }
    Optional<MemoryMapping> vdso = maps.first(MappingKind.VDSO);
    if (vdso.isPresent()) {
      try {
        ElfFile elf = opener.openVdso(vdso.get(), ProcessMemory.of(pid));
        reports.add(inspector.inspect(new ElfModuleImage(elf, "[vdso]"),
            vdso.get().start() - elf.imageStartAddress()));
      } catch (ModuleOpenException e) {
        console.warn("skipped [vdso]: " + e.getMessage());
      }
    }
    return reports;
  }

  private List<ModuleReport> withValidated(List<ModuleReport> reports, int pid) {
    var registry = PolystackCommand.loadPlugins(loader, parent.pluginPath, console);
    try {
      validated = new dev.polystack.host.session.DumpSession(ProcFs.system(), registry, guard,
          console::warn).validateOffsets(pid, SNAPSHOTS);
    } catch (dev.polystack.host.sampling.SamplingException e) {
      throw new CommandFailedException(e.getMessage());
    }
    List<ModuleReport> out = new ArrayList<>();
    for (ModuleReport r : reports) {
      var extra = validated.getOrDefault(r.module(), List.of());
      if (extra.isEmpty()) {
        out.add(r);
        continue;
      }
      List<ModuleReport.Finding> findings = new ArrayList<>();
      for (ModuleReport.Finding f : r.findings()) {
        if (f.status() == ModuleReport.Status.SUPPORTED) {
          List<dev.polystack.plugin.api.DiscoveredOffset> offsets = new ArrayList<>(f.offsets());
          offsets.removeIf(o -> extra.stream().anyMatch(x -> x.name().equals(o.name())));
          offsets.addAll(extra);
          f = new ModuleReport.Finding(f.plugin(), f.status(), f.summary(), f.evidence(),
              f.codeRanges(), offsets);
        }
        findings.add(f);
      }
      out.add(new ModuleReport(r.module(), r.buildId(), r.bias(), findings));
    }
    return out;
  }

  /**
   * Runtime minus link-time address: the first mapping's start minus the link-time address of
   * the file offset it maps.
   */
  static long bias(MappedFile m, ElfFile elf) {
    MemoryMapping first = m.mappings().get(0);
    return elf.offsetToVirtualAddress(first.offset())
        .stream().map(vaddr -> first.start() - vaddr).findFirst()
        .orElse(m.loadBase());
  }
}
