package example.cpython;

/** Checks on pointers read from the target before they are followed. */
final class Pointers {
  private Pointers() {}

  /** A user-space x86-64 address, 8-byte aligned as every object CPython allocates. */
  static boolean plausible(long address) {
    return address >= 0x1000 && address < 0x0000_8000_0000_0000L && (address & 7) == 0;
  }
}
