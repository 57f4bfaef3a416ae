package dev.polystack.host.alloc;

import dev.polystack.host.bpf.AllocationProbes;
import dev.polystack.host.bpf.AllocationProbes.Kind;
import dev.polystack.host.elf.ElfFile;
import dev.polystack.host.elf.ElfParseException;
import dev.polystack.host.elf.ElfSymbol;
import dev.polystack.plugin.api.Mapping;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;

/**
 * Where a process's allocator entry points are: for the C library it maps, each function's file
 * offset (from the PT_LOAD that holds its symbol; uprobes take file offsets) and runtime range.
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
    List<long[]> ranges) {

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

  /** A process whose allocator cannot be probed: the message is the user's one line. */
  public static final class SiteException extends Exception {
    private static final long serialVersionUID = 1L;

    SiteException(String message) {
      super(message);
    }
  }

  /** The C library's sites in process {@code pid} with memory map {@code mappings}. */
  public static AllocatorSites ofLibc(int pid, List<Mapping> mappings) throws SiteException {
    Optional<Mapping> libc = mappings.stream()
        .filter(m -> m.executable() && isLibc(m.path())).findFirst();
    if (libc.isEmpty()) {
      throw new SiteException("process " + pid + " has no C library mapped (libc.so.6): a"
          + " statically linked program or another allocator is not supported yet; profile a"
          + " dynamically linked program");
    }
    String path = libc.get().path();
    Path file = Path.of("/proc/" + pid + "/root" + path);
    List<Long> offsets = new ArrayList<>();
    List<Kind> kinds = new ArrayList<>();
    List<String> names = new ArrayList<>();
    List<long[]> ranges = new ArrayList<>();
    try (ElfFile elf = ElfFile.open(file)) {
      for (Map.Entry<String, Kind> e : LIBC.entrySet()) {
        Optional<ElfSymbol> symbol = elf.findDynamicSymbol(e.getKey());
        if (symbol.isEmpty() || symbol.get().value() == 0) {
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
    } catch (ElfParseException e) {
      throw new SiteException("cannot read the C library " + path + " of process " + pid + ": "
          + e.getMessage());
    }
    if (!kinds.contains(Kind.MALLOC)) {
      throw new SiteException("the C library " + path + " of process " + pid
          + " exports no malloc: it is not a C library polystack can probe");
    }
    return new AllocatorSites(file, offsets.stream().mapToLong(Long::longValue).toArray(),
        List.copyOf(kinds), List.copyOf(names), List.copyOf(ranges));
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
