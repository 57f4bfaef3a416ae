package dev.polystack.host.monitor;

import dev.polystack.host.elf.ElfFile;
import dev.polystack.host.elf.ElfParseException;
import dev.polystack.host.memory.ProcessMemory;
import dev.polystack.host.modules.ElfModuleImage;
import dev.polystack.host.modules.ModuleOpenException;
import dev.polystack.host.modules.ModuleOpener;
import dev.polystack.host.proc.MappingKind;
import dev.polystack.host.proc.MemoryMapping;
import dev.polystack.plugin.api.ArgumentDecoder;
import dev.polystack.plugin.api.ArgumentRegisters;
import dev.polystack.plugin.api.DecodedArgument;
import dev.polystack.plugin.api.DecodedReturn;
import dev.polystack.plugin.api.ImageReadException;
import dev.polystack.plugin.api.ModuleImage;
import dev.polystack.plugin.api.ModuleSymbol;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.function.Consumer;

/**
 * The argument decoders probe plug-ins offer for the sites of one {@code --monitor args} run,
 * and their use on each record: a site at a function's entry (or its {@code %return}) gets the
 * first decoder offered for its symbol; a decoder that throws or answers something invalid is
 * counted ({@link #DECODE_FAILED}) and that record keeps only its raw registers. The plug-ins
 * see the module's image while they are asked and registers afterwards, never the target.
 */
public final class SiteDecoders {
  /** The summary counter of records a decoder failed on. */
  public static final String DECODE_FAILED = "decode_failed";
  private static final String VDSO_PREFIX = "__vdso_";

  /** Where decoders come from: the loaded probe plug-ins, each asked through the host's guard. */
  @FunctionalInterface
  public interface Source {
    /** A decoder for {@code symbol} of {@code image}, with the plug-in that offers it. */
    Optional<Offer> offer(ModuleImage image, ModuleSymbol symbol);
  }

  /** A decoder and the id of the plug-in that offered it. */
  public record Offer(String plugin, ArgumentDecoder decoder) {
    public Offer {
      Objects.requireNonNull(plugin, "plugin");
      Objects.requireNonNull(decoder, "decoder");
    }
  }

  /**
   * What a decoder made of one record.
   *
   * @param plugin the id of the plug-in whose decoder it was
   * @param arguments the arguments, empty for a return whose entry registers were not kept
   * @param returned the return value of a return record; null for an entry
   */
  public record Decoded(String plugin, List<DecodedArgument> arguments, DecodedReturn returned) {
    public Decoded {
      Objects.requireNonNull(plugin, "plugin");
      arguments = List.copyOf(arguments); // refuses null elements
      if (arguments.size() > ArgumentDecoder.MAX_ARGUMENTS) {
        throw new IllegalArgumentException(arguments.size() + " arguments, at most "
            + ArgumentDecoder.MAX_ARGUMENTS);
      }
      Set<String> names = new HashSet<>();
      for (DecodedArgument a : arguments) {
        if (!names.add(a.name())) {
          throw new IllegalArgumentException("argument " + a.name() + " named twice");
        }
      }
    }
  }

  private final Map<ProbeSite, Offer> bySite;
  private final Consumer<String> warn;
  private long failed;
  private boolean warned;

  SiteDecoders(Map<ProbeSite, Offer> bySite, Consumer<String> warn) {
    this.bySite = Map.copyOf(bySite);
    this.warn = Objects.requireNonNull(warn, "warn");
  }

  /**
   * Asks {@code source} for a decoder of each function site of {@code sites} in process {@code
   * pid}: entry and {@code %return} sites of a symbol (not +OFF inside a function, where the
   * argument registers hold anything, nor a bare address). A module that cannot be opened
   * again, just after it was resolved, gets none: its records stay raw.
   */
  public static SiteDecoders find(int pid, List<MemoryMapping> mappings, List<ProbeSite> sites,
      Source source, Consumer<String> warn) {
    Map<ProbeSite, Offer> found = new HashMap<>();
    for (ProbeSite site : sites) {
      SiteSpec spec = site.spec();
      if (spec.isAddress() || spec.offset() != 0) {
        continue;
      }
      try (ElfFile elf = open(pid, mappings, site)) {
        if (elf == null) {
          continue;
        }
        ModuleImage image = new ElfModuleImage(elf, site.module());
        Optional<ModuleSymbol> symbol = function(image, spec.symbol());
        if (symbol.isEmpty() && spec.isVdso() && !spec.symbol().startsWith(VDSO_PREFIX)) {
          symbol = function(image, VDSO_PREFIX + spec.symbol());
        }
        if (symbol.isPresent()) {
          source.offer(image, symbol.get()).ifPresent(o -> found.put(site, o));
        }
      } catch (ElfParseException | ModuleOpenException | ImageReadException e) {
        // the site was resolved from this module a moment ago; without it, raw registers
      }
    }
    return new SiteDecoders(found, warn);
  }

  private static ElfFile open(int pid, List<MemoryMapping> mappings, ProbeSite site)
      throws ElfParseException, ModuleOpenException {
    if (site.file() != null) {
      return ElfFile.open(site.file());
    }
    if (!site.spec().isVdso()) {
      return null;
    }
    MemoryMapping vdso = mappings.stream().filter(m -> m.kind() == MappingKind.VDSO)
        .findFirst().orElse(null);
    return vdso == null ? null : ModuleOpener.vdso(vdso, ProcessMemory.of(pid));
  }

  private static Optional<ModuleSymbol> function(ModuleImage image, String name)
      throws ImageReadException {
    return image.symbol(name).filter(s -> s.function() && s.value() != 0);
  }

  /** The id of the plug-in that decodes {@code site}, or null. */
  public String decoderOf(ProbeSite site) {
    Offer o = bySite.get(site);
    return o == null ? null : o.plugin();
  }

  /** Records a decoder failed on so far. */
  public long failed() {
    return failed;
  }

  /**
   * What the site's decoder makes of {@code hit}: null when it has none, or when the decoder
   * threw or answered something invalid (counted, and the first such failure warned of).
   */
  Decoded decode(ProbeSession.Hit hit) {
    Offer o = bySite.get(hit.site());
    if (o == null) {
      return null;
    }
    try {
      List<DecodedArgument> arguments = hit.args() == null ? List.of()
          : o.decoder().arguments(ArgumentRegisters.of(hit.args()));
      DecodedReturn returned = null;
      if (hit.atReturn()) {
        returned = Objects.requireNonNull(o.decoder().returnValue(hit.rax()),
            "returnValue answered null");
      }
      return new Decoded(o.plugin(), Objects.requireNonNull(arguments,
          "arguments answered null"), returned);
    } catch (Throwable t) {
      // As PluginGuard: the JVM's own failures are not the plug-in's to survive, a runaway
      // recursion in plug-in code is.
      if (t instanceof VirtualMachineError && !(t instanceof StackOverflowError)) {
        throw (VirtualMachineError) t;
      }
      failed++;
      if (!warned) {
        warned = true;
        warn.accept("plug-in '" + o.plugin() + "' could not decode a record of "
            + hit.site().name() + " (" + oneLine(t) + "): its records are shown as raw"
            + " registers and counted as " + DECODE_FAILED + "; further failures are not shown");
      }
      return null;
    }
  }

  private static String oneLine(Throwable t) {
    String message = t.getMessage();
    StringBuilder sb = new StringBuilder(t.getClass().getSimpleName());
    if (message != null) {
      sb.append(": ").append(message, 0, Math.min(message.length(), 200));
    }
    for (int i = 0; i < sb.length(); i++) {
      if (Character.isISOControl(sb.charAt(i))) {
        sb.setCharAt(i, ' ');
      }
    }
    return sb.toString();
  }

  /** No decoders: every record raw. */
  static SiteDecoders none() {
    return new SiteDecoders(Map.of(), s -> { });
  }
}
