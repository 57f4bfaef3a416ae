package dev.polystack.host.elf;

/** One occurrence of a searched byte string: its input offset and link-time address. */
public record RodataMatch(long offset, long address) {}
