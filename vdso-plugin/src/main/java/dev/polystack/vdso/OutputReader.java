package dev.polystack.vdso;

import dev.polystack.plugin.api.MemoryReadException;
import dev.polystack.plugin.api.ProbeHit;

/**
 * Reads what a function wrote through its pointer arguments, at its return hit. A stopped thread
 * (exact backends) is read directly; otherwise only bytes inside the stack window the backend
 * copied at the return (from the stack pointer after {@code ret} upwards) are served, since a
 * later read of a running target would race with it. Anything else is "not captured": null.
 */
final class OutputReader {
  private final ProbeHit exit;

  OutputReader(ProbeHit exit) {
    this.exit = exit;
  }

  /** {@code length} bytes at {@code address}, or null when they were not captured. */
  byte[] read(long address, int length) {
    if (exit.memory() != null) {
      try {
        return exit.memory().readFully(address, length);
      } catch (MemoryReadException e) {
        return null;
      }
    }
    long window = exit.registers().sp();
    byte[] stack = exit.stack();
    long offset = address - window;
    if (address == 0 || offset < 0 || offset > stack.length - (long) length) {
      return null;
    }
    byte[] out = new byte[length];
    System.arraycopy(stack, (int) offset, out, 0, length);
    return out;
  }
}
