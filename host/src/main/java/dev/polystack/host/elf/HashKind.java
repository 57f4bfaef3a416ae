package dev.polystack.host.elf;

/** Which dynamic-symbol hash table to use for a lookup or count. */
public enum HashKind {
  /** DT_HASH: classic System V {@code elf_hash} buckets and chains. */
  SYSV,
  /** DT_GNU_HASH: bloom filter plus sorted hash chains. */
  GNU
}
