package dev.polystack.host.alloc;

import dev.polystack.host.bpf.AllocationProbes;
import dev.polystack.host.bpf.AllocationProbes.Kind;
import dev.polystack.host.elf.ElfFile;
import dev.polystack.host.elf.ElfParseException;
import dev.polystack.host.elf.ElfSymbol;
import dev.polystack.host.proc.ProcFs;
import dev.polystack.host.proc.ProcReadException;
import dev.polystack.plugin.api.Mapping;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;

/**
 * Where a process's allocator entry points are: for the allocator it calls ({@link #of}), each
 * function's file offset (from the PT_LOAD that holds its symbol; uprobes take file offsets) and runtime range.
 * Functions at one offset (aligned_alloc and memalign) are one site: two probes at one offset
 * would count a call twice.
 *
 * @param file the library as polystack opens it (through /proc/PID/root)
 * @param offsets file offsets of the sites, one per {@code kinds} entry
 * @param kinds what each site's arguments mean; the index is the site's cookie
 * @param names the symbol each site was found by
 * @param ranges the sites' functions in the process, {@code [start, end)}
 */
public record AllocatorSites(Path file, long[] offsets, List<Kind> kinds, List<String> names,
    List<long[]> ranges, Mappers mappers) {

  /**
   * The C library's {@code mmap} and {@code munmap}, probed beside the allocator for the
   * anonymous memory a program maps itself; calls from the {@code texts} (the C library's and
   * the allocator's code, whose own mmap serves malloc) are not counted.
   *
   * @param file the C library as polystack opens it; null: none ({@link #NONE})
   */
  public record Mappers(Path file, long[] offsets, List<Kind> kinds, List<long[]> texts) {
    /** A statically linked program: its own mmap serves its malloc, none is probed. */
    public static final Mappers NONE = new Mappers(null, new long[0], List.of(), List.of());

    public Mappers {
      offsets = offsets.clone();
      kinds = List.copyOf(kinds);
      texts = List.copyOf(texts);
      if (offsets.length != kinds.size()) {
        throw new IllegalArgumentException("one kind per offset");
      }
    }
  }

  public AllocatorSites(Path file, long[] offsets, List<Kind> kinds, List<String> names,
      List<long[]> ranges) {
    this(file, offsets, kinds, names, ranges, Mappers.NONE);
  }

  /** ELF program header type of the interpreter (ld.so) a dynamically linked program names. */
  private static final int PT_INTERP = 3;
  /** Bytes read of /proc/PID/environ and ld.so.preload. */
  private static final int MAX_TEXT_BYTES = 64 * 1024;

  /** The C library's entry points, in the order their sites are numbered. */
  private static final Map<String, Kind> LIBC = new LinkedHashMap<>();

  static {
    LIBC.put("malloc", Kind.MALLOC);
    LIBC.put("calloc", Kind.CALLOC);
    LIBC.put("realloc", Kind.REALLOC);
    LIBC.put("free", Kind.FREE);
    LIBC.put("posix_memalign", Kind.POSIX_MEMALIGN);
    LIBC.put("aligned_alloc", Kind.MEMALIGN);
    LIBC.put("memalign", Kind.MEMALIGN);
  }

  /** The C library's functions that map and unmap anonymous memory. */
  private static final Map<String, Kind> MAPPERS = new LinkedHashMap<>();

  static {
    MAPPERS.put("mmap", Kind.MMAP);
    MAPPERS.put("munmap", Kind.MUNMAP);
  }

  /** A process whose allocator cannot be probed: the message is the user's one line. */
  public static final class SiteException extends Exception {
    private static final long serialVersionUID = 1L;

    SiteException(String message) {
      super(message);
    }
  }

  /**
   * The sites of the allocator process {@code pid} calls: the first module, in the order the
   * dynamic linker binds {@code malloc}, that defines it. That is the executable (a statically
   * linked program's own malloc, from its symbol table, or a dynamic one that exports malloc),
   * then the libraries of LD_PRELOAD as the process started with it and of /etc/ld.so.preload,
   * then any other mapped library but the C library (a program linked with -ljemalloc), in
   * address order, then the C library. Only that module is probed: an allocator that hands
   * calls on to the C library (a wrapper) would otherwise be counted twice.
   */
  public static AllocatorSites of(ProcFs proc, int pid, List<Mapping> mappings)
      throws SiteException {
    List<String> refused = new ArrayList<>();
    Path processDir = proc.root().resolve(Integer.toString(pid));
    for (String path : searchOrder(proc, pid, mappings)) {
      Path file = processDir.resolve("root" + path);
      try (ElfFile elf = ElfFile.open(file)) {
        boolean exported = defines(elf.findDynamicSymbol("malloc"));
        // Without an interpreter nothing is linked at run time: the symbol table is the truth.
        boolean staticProgram = !exported && elf.programHeaders().stream()
            .noneMatch(h -> h.type() == PT_INTERP) && defines(elf.staticSymbols().find("malloc"));
        if (exported || staticProgram) {
          return sites(pid, processDir, mappings, path, file, elf, staticProgram);
        }
      } catch (ElfParseException e) {
        refused.add(path + " (" + e.getMessage() + ")");
      }
    }
    throw new SiteException("process " + pid + " has no allocator polystack can probe: no"
        + " module it maps defines malloc"
        + (refused.isEmpty() ? " (a statically linked program without a symbol table?)"
            : "; unreadable: " + String.join(", ", refused))
        + "; profile a program whose malloc has a symbol");
  }

  /** Where {@link #of} looks for malloc, first to last, each path once. */
  static List<String> searchOrder(ProcFs proc, int pid, List<Mapping> mappings) {
    List<String> mapped = mappings.stream()
        .filter(m -> m.executable() && m.path().startsWith("/") && !m.deleted())
        .map(Mapping::path).distinct().toList();
    java.util.LinkedHashSet<String> order = new java.util.LinkedHashSet<>();
    Path procDir = proc.root().resolve(Integer.toString(pid));
    try {
      String exe = proc.forPid(pid).exe();
      if (mapped.contains(exe)) {
        order.add(exe);
      }
    } catch (ProcReadException e) {
      // no executable to read (gone, or a kernel thread): the libraries still count
    }
    List<String> preload = new ArrayList<>(environmentPreload(procDir));
    preload.addAll(words(readBounded(procDir.resolve("root/etc/ld.so.preload"))));
    for (String entry : preload) {
      String name = entry.substring(entry.lastIndexOf('/') + 1);
      mapped.stream().filter(p -> p.equals(entry)
          || (!entry.contains("/") && p.endsWith("/" + name))).findFirst().ifPresent(order::add);
    }
    mapped.stream().filter(p -> !isLibc(p) && !p.contains("/ld-linux")).forEach(order::add);
    mapped.stream().filter(AllocatorSites::isLibc).forEach(order::add);
    return List.copyOf(order);
  }

  /** LD_PRELOAD of the environment the process started with (bounded). */
  private static List<String> environmentPreload(Path procDir) {
    for (String entry : readBounded(procDir.resolve("environ")).split("\0")) {
      if (entry.startsWith("LD_PRELOAD=")) {
        return words(entry.substring("LD_PRELOAD=".length()));
      }
    }
    return List.of();
  }

  /** ld.so's separators in LD_PRELOAD and ld.so.preload: spaces, tabs, colons, newlines. */
  private static List<String> words(String text) {
    List<String> out = new ArrayList<>();
    for (String line : text.split("\n")) {
      String kept = line.startsWith("#") ? "" : line;
      for (String w : kept.split("[\\s:]+")) {
        if (!w.isEmpty()) {
          out.add(w);
        }
      }
    }
    return out;
  }

  /** At most {@link #MAX_TEXT_BYTES} of a small text file; empty when it cannot be read. */
  private static String readBounded(Path path) {
    try (java.io.InputStream in = Files.newInputStream(path)) {
      return new String(in.readNBytes(MAX_TEXT_BYTES), java.nio.charset.StandardCharsets.UTF_8);
    } catch (IOException e) {
      return "";
    }
  }

  private static boolean defines(Optional<ElfSymbol> symbol) {
    return symbol.isPresent() && symbol.get().isDefined() && symbol.get().value() != 0;
  }

  /** The sites of the allocator {@code elf}, mapped at {@code path} in process {@code pid}. */
  private static AllocatorSites sites(int pid, Path processDir, List<Mapping> mappings,
      String path, Path file, ElfFile elf, boolean fromSymbolTable)
      throws ElfParseException, SiteException {
    List<Long> offsets = new ArrayList<>();
    List<Kind> kinds = new ArrayList<>();
    List<String> names = new ArrayList<>();
    List<long[]> ranges = new ArrayList<>();
    for (Map.Entry<String, Kind> e : LIBC.entrySet()) {
      Optional<ElfSymbol> symbol = fromSymbolTable ? elf.staticSymbols().find(e.getKey())
          : elf.findDynamicSymbol(e.getKey());
      if (!defines(symbol)) {
        continue;
      }
      OptionalLong offset = elf.virtualAddressToOffset(symbol.get().value());
      if (offset.isEmpty() || offsets.contains(offset.getAsLong())) {
        continue;
      }
      if (offsets.size() == AllocationProbes.MAX_SITES) {
        break;
      }
      long at = offset.getAsLong();
      OptionalLong start = runtimeAddress(mappings, path, at);
      if (start.isEmpty()) {
        continue; // that part of the file is not mapped executable: nothing calls it
      }
      offsets.add(at);
      kinds.add(e.getValue());
      names.add(e.getKey());
      ranges.add(new long[] {start.getAsLong(),
          start.getAsLong() + Math.max(1, symbol.get().size())});
    }
    if (!kinds.contains(Kind.MALLOC)) {
      throw new SiteException("the allocator " + path + " of process " + pid
          + " has no malloc mapped executable: polystack cannot probe it");
    }
    return new AllocatorSites(file, offsets.stream().mapToLong(Long::longValue).toArray(),
        List.copyOf(kinds), List.copyOf(names), List.copyOf(ranges),
        fromSymbolTable ? Mappers.NONE : mappers(processDir, mappings, path));
  }

  /**
   * The C library's mmap and munmap in the process of {@code processDir} (/proc/PID), whose
   * allocator is at {@code allocatorPath}; none when no C library is mapped or it cannot be
   * read (counted nowhere: the allocator's sites still work).
   */
  private static Mappers mappers(Path processDir, List<Mapping> mappings,
      String allocatorPath) {
    String libc = mappings.stream().filter(m -> m.executable() && isLibc(m.path()))
        .map(Mapping::path).findFirst().orElse(null);
    if (libc == null) {
      return Mappers.NONE;
    }
    Path file = processDir.resolve("root" + libc);
    List<Long> offsets = new ArrayList<>();
    List<Kind> kinds = new ArrayList<>();
    try (ElfFile elf = ElfFile.open(file)) {
      for (Map.Entry<String, Kind> e : MAPPERS.entrySet()) {
        Optional<ElfSymbol> symbol = elf.findDynamicSymbol(e.getKey());
        OptionalLong offset = defines(symbol)
            ? elf.virtualAddressToOffset(symbol.get().value()) : OptionalLong.empty();
        if (offset.isPresent() && runtimeAddress(mappings, libc, offset.getAsLong()).isPresent()) {
          offsets.add(offset.getAsLong());
          kinds.add(e.getValue());
        }
      }
    } catch (ElfParseException e) {
      return Mappers.NONE;
    }
    List<long[]> texts = new ArrayList<>();
    for (Mapping m : mappings) {
      if (m.executable() && (m.path().equals(libc) || m.path().equals(allocatorPath))) {
        texts.add(new long[] {m.start(), m.end()});
      }
    }
    return new Mappers(file, offsets.stream().mapToLong(Long::longValue).toArray(), kinds,
        texts);
  }

  /** The module the sites are in, as the process maps it. */
  public String module() {
    String f = file.toString();
    int root = f.indexOf("/root/");
    return root >= 0 ? f.substring(root + "/root".length()) : f;
  }

  /** The link cookies: site i has cookie i. */
  public long[] cookies() {
    long[] c = new long[offsets.length];
    for (int i = 0; i < c.length; i++) {
      c[i] = i;
    }
    return c;
  }

  /**
   * The process's executable ranges, at most {@code max}: when there are more, the closest
   * neighbours are merged (a merged gap only lets a few non-return words into the digest).
   */
  public static List<long[]> textRanges(List<Mapping> mappings, int max) {
    List<long[]> out = new ArrayList<>();
    mappings.stream().filter(Mapping::executable)
        .filter(m -> Long.compareUnsigned(m.end(), 1L << 47) <= 0)
        .sorted((a, b) -> Long.compareUnsigned(a.start(), b.start()))
        .forEach(m -> {
          long[] last = out.isEmpty() ? null : out.get(out.size() - 1);
          if (last != null && last[1] == m.start()) {
            last[1] = m.end();
          } else {
            out.add(new long[] {m.start(), m.end()});
          }
        });
    while (out.size() > max) {
      int best = 0;
      for (int i = 1; i + 1 < out.size(); i++) {
        if (out.get(i + 1)[0] - out.get(i)[1] < out.get(best + 1)[0] - out.get(best)[1]) {
          best = i;
        }
      }
      out.get(best)[1] = out.get(best + 1)[1];
      out.remove(best + 1);
    }
    return out;
  }

  private static OptionalLong runtimeAddress(List<Mapping> mappings, String path, long offset) {
    for (Mapping m : mappings) {
      if (m.executable() && m.path().equals(path) && offset >= m.fileOffset()
          && offset - m.fileOffset() < m.end() - m.start()) {
        return OptionalLong.of(m.start() + (offset - m.fileOffset()));
      }
    }
    return OptionalLong.empty();
  }

  static boolean isLibc(String path) {
    String name = path.substring(path.lastIndexOf('/') + 1);
    return name.equals("libc.so.6") || name.matches("libc-2\\.[0-9]+\\.so");
  }
}
