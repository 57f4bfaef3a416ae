package dev.polystack.host.process;

import dev.polystack.host.elf.ElfFile;
import dev.polystack.host.elf.ElfParseException;
import dev.polystack.host.elf.ElfSymbol;
import dev.polystack.host.elf.Fde;
import dev.polystack.host.elf.SymbolMatch;
import dev.polystack.host.modules.DebugFiles;
import dev.polystack.otel.counters.HostCounters;
import java.util.Optional;
import java.util.function.Consumer;

/**
 * Function names for one module: its own .symtab/.dynsym, or a separate debug file when the
 * module itself is stripped, found and verified by {@link DebugFiles} (inside the target's root,
 * no symlinks, matching build id or CRC32). Built lazily, once per module. Failures are counted:
 * {@code debug_file_<reason>} per refused candidate, {@code symbols_unreadable} once per module
 * whose symbol table cannot be used.
 */
public final class NativeSymbols {
  private final ElfFile elf;
  private final String path;
  private final DebugFiles debugFiles;
  private final Consumer<String> count;
  private volatile ElfFile source;
  private volatile boolean broken;
  private volatile boolean unwindTablesBroken;

  NativeSymbols(ElfFile elf, String path, DebugFiles debugFiles, Consumer<String> count) {
    this.elf = elf;
    this.path = path;
    this.debugFiles = debugFiles;
    this.count = count;
  }

  /**
   * The name to show for a symbol: static tables name compat aliases {@code name@VERSION}
   * (from .symver), which is noise in a stack; C and C++ names never contain '@' otherwise.
   */
  public static String displayName(String symbol) {
    int at = symbol.indexOf('@');
    return at > 0 && !symbol.startsWith(FUNCTION_AT, at) ? symbol.substring(0, at) : symbol;
  }

  /**
   * What a function no symbol names is called: {@code MODULE!fn@0xSTART}, its start (link-time
   * address) from the unwind tables' FDE, so every sample in it gets one frame, as perf's
   * {@code [unknown]} cannot; the address is the one objdump and addr2line take.
   */
  static final String FUNCTION_AT = "@0x";

  /** The function containing a link-time address, or empty. */
  public Optional<SymbolMatch> lookup(long linkTimeAddress) {
    if (broken) {
      return Optional.empty();
    }
    Optional<SymbolMatch> named;
    try {
      named = symbolSource().symbolize(linkTimeAddress);
    } catch (ElfParseException e) {
      if (!broken) {
        broken = true; // a bad symbol table stays bad; do not pay for it again
        count.accept(HostCounters.SYMBOLS_UNREADABLE.name());
      }
      return Optional.empty();
    }
    return named.isPresent() ? named : functionStart(linkTimeAddress);
  }

  /** The function around an address no symbol covers, from its FDE (see {@link #FUNCTION_AT}). */
  private Optional<SymbolMatch> functionStart(long linkTimeAddress) {
    if (unwindTablesBroken) {
      return Optional.empty();
    }
    Optional<Fde> fde;
    try {
      fde = elf.findFde(linkTimeAddress);
    } catch (ElfParseException e) {
      unwindTablesBroken = true;
      count.accept("function_starts_unreadable");
      return Optional.empty();
    }
    return fde.map(f -> new SymbolMatch(new ElfSymbol(0, baseName() + "!fn" + FUNCTION_AT
        + Long.toHexString(f.pcBegin()), f.pcBegin(), f.pcRange(), ElfSymbol.STT_FUNC, 0, 0,
        null, false, false), linkTimeAddress - f.pcBegin()));
  }

  private String baseName() {
    return path.substring(path.lastIndexOf('/') + 1);
  }

  /** The module's full symbol table's file: itself, or its verified debug file. */
  ElfFile symbolSource() throws ElfParseException {
    ElfFile s = source;
    return s != null ? s : resolveSource();
  }

  /** Once per module: concurrent first lookups must not search (and count) twice. */
  private synchronized ElfFile resolveSource() throws ElfParseException {
    ElfFile s = source;
    if (s == null) {
      s = elf;
      if (elf.staticSymbols().isEmpty()) {
        s = debugFiles.find(elf, path,
            reason -> count.accept(HostCounters.debugFileRefused(reason).name())).orElse(elf);
      }
      source = s;
    }
    return s;
  }
}
