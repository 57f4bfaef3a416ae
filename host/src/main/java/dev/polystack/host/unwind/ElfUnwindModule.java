package dev.polystack.host.unwind;

import dev.polystack.host.cache.BoundedMap;
import dev.polystack.host.elf.ElfFile;
import dev.polystack.host.elf.ElfParseException;
import dev.polystack.host.elf.Fde;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * CFI of one ELF module mapped at a bias, with a bounded cache of evaluated rows: the same few
 * hundred PCs recur in every sample, and evaluating their FDE programs once is what keeps the
 * target pause short.
 */
public final class ElfUnwindModule implements UnwindModule {
  static final int MAX_CACHED_ROWS = 8192;

  private final ElfFile elf;
  private final long bias;
  private final String name;
  private final Map<Long, Object> rows =
      BoundedMap.leastRecentlyUsed(MAX_CACHED_ROWS);

  public ElfUnwindModule(ElfFile elf, long bias, String name) {
    this.elf = Objects.requireNonNull(elf, "elf");
    this.bias = bias;
    this.name = Objects.requireNonNull(name, "name");
  }

  @Override
  public long bias() {
    return bias;
  }

  @Override
  public String name() {
    return name;
  }

  public ElfFile elf() {
    return elf;
  }

  /** Cached: a row, or the CfiException a PC gave (failures recur too). */
  @Override
  public synchronized UnwindRow row(long linkTimePc) throws CfiException {
    Object cached = rows.get(linkTimePc);
    if (cached == null) {
      cached = compute(linkTimePc);
      rows.put(linkTimePc, cached);
    }
    if (cached instanceof CfiException e) {
      throw new CfiException(e.error(), e.getMessage());
    }
    return (UnwindRow) cached;
  }

  private Object compute(long linkTimePc) {
    try {
      Optional<Fde> fde = elf.findFde(linkTimePc);
      if (fde.isEmpty()) {
        return new CfiException(UnwindError.NO_FDE,
            name + " has no CFI for 0x" + Long.toHexString(linkTimePc));
      }
      return CfiInterpreter.rowFor(fde.get(), linkTimePc);
    } catch (ElfParseException e) {
      return new CfiException(UnwindError.BAD_CFI, name + ": " + e.getMessage());
    } catch (CfiException e) {
      return e;
    }
  }
}
