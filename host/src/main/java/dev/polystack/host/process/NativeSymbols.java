package dev.polystack.host.process;

import dev.polystack.host.elf.ElfFile;
import dev.polystack.host.elf.ElfParseException;
import dev.polystack.host.elf.SymbolMatch;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * Function names for one module: its own .symtab/.dynsym, or a separate debug file found the way
 * gdb finds one (/usr/lib/debug/.build-id/xx/rest.debug, then .gnu_debuglink next to the file and
 * under /usr/lib/debug) when the module itself is stripped. Built lazily, once per module.
 */
public final class NativeSymbols {
  private final ElfFile elf;
  private final String path;
  private final Path debugRoot;
  private volatile ElfFile source;
  private volatile boolean broken;

  NativeSymbols(ElfFile elf, String path, Path debugRoot) {
    this.elf = elf;
    this.path = path;
    this.debugRoot = debugRoot;
  }

  /**
   * The name to show for a symbol: static tables name compat aliases {@code name@VERSION}
   * (from .symver), which is noise in a stack; C and C++ names never contain '@' otherwise.
   */
  public static String displayName(String symbol) {
    int at = symbol.indexOf('@');
    return at > 0 ? symbol.substring(0, at) : symbol;
  }

  /** The function containing a link-time address, or empty. */
  public Optional<SymbolMatch> lookup(long linkTimeAddress) {
    if (broken) {
      return Optional.empty();
    }
    try {
      return symbolSource().symbolize(linkTimeAddress);
    } catch (ElfParseException e) {
      broken = true; // a bad symbol table stays bad; do not pay for it again
      return Optional.empty();
    }
  }

  private ElfFile symbolSource() throws ElfParseException {
    ElfFile s = source;
    if (s == null) {
      s = elf;
      if (elf.staticSymbols().isEmpty()) {
        for (Path candidate : debugCandidates()) {
          try {
            if (Files.isRegularFile(candidate)) {
              ElfFile debug = ElfFile.open(candidate);
              if (!debug.staticSymbols().isEmpty() && sameBuild(debug)) {
                s = debug;
                break;
              }
            }
          } catch (ElfParseException | SecurityException e) {
            // try the next candidate; the module's own symbols remain the fallback
          }
        }
      }
      source = s;
    }
    return s;
  }

  private boolean sameBuild(ElfFile debug) throws ElfParseException {
    var mine = elf.buildId();
    return mine.isEmpty() || mine.equals(debug.buildId());
  }

  private List<Path> debugCandidates() throws ElfParseException {
    List<Path> out = new ArrayList<>();
    var id = elf.buildId();
    if (id.isPresent() && id.get().hex().length() > 2) {
      String hex = id.get().hex();
      out.add(debugRoot.resolve(".build-id").resolve(hex.substring(0, 2))
          .resolve(hex.substring(2) + ".debug"));
    }
    var link = elf.debugLink();
    if (link.isPresent() && !path.startsWith("[")) {
      Path dir = Path.of(path).getParent();
      String name = link.get().fileName();
      if (dir != null && !name.contains("/")) {
        out.add(dir.resolve(name));
        out.add(dir.resolve(".debug").resolve(name));
        out.add(debugRoot.resolve(dir.toString().replaceFirst("^/+", "")).resolve(name));
      }
    }
    return out;
  }
}
