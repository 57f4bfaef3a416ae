package dev.polystack.host.elf;

import java.util.Objects;

/** Result of an address lookup: the symbol and the address's (unsigned) offset from its start. */
public record SymbolMatch(ElfSymbol symbol, long offset) {
  public SymbolMatch {
    Objects.requireNonNull(symbol, "symbol");
  }

  @Override
  public String toString() {
    return symbol.name() + "+0x" + Long.toHexString(offset);
  }
}
