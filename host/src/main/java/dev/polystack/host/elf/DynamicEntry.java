package dev.polystack.host.elf;

/** One {@code Elf64_Dyn} entry; see {@link DynamicSection} for the tag constants. */
public record DynamicEntry(long tag, long value) {}
