package dev.polystack.host.bpf;

import dev.polystack.host.sys.Native;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import jnr.ffi.LibraryLoader;
import jnr.ffi.Pointer;

/**
 * Keeps libbpf's recent warnings instead of letting it print them: polystack reports a failed
 * load in one line, and the telling part (libbpf's ELF or map error) is among these. The
 * verifier's log does not come through here (see {@link BpfObject#load(String)}).
 */
final class BpfLog {
  private static final int KEEP = 64;
  private static final int LIBBPF_INFO = 1;
  private static final int LINE_MAX = 1024;
  private static final Deque<String> LINES = new ArrayDeque<>();
  private static final LibBpf.Format LIBC = LibraryLoader.create(LibBpf.Format.class).load("c");

  /** Strongly held for as long as libbpf may call it (the whole JVM). */
  static final LibBpf.PrintCallback CALLBACK = BpfLog::print;

  private BpfLog() {}

  // Called from native code: must never throw.
  private static int print(int level, Pointer format, Pointer args) {
    if (level > LIBBPF_INFO) {
      return 0; // debug chatter: dozens of lines per load, never the reason for a failure
    }
    try {
      Pointer buf = Native.allocate(LINE_MAX);
      LIBC.vsnprintf(buf, LINE_MAX, format, args);
      String text = buf.getString(0, LINE_MAX, StandardCharsets.UTF_8);
      synchronized (LINES) {
        for (String line : text.split("\n")) {
          if (!line.isBlank()) {
            if (LINES.size() == KEEP) {
              LINES.removeFirst();
            }
            LINES.addLast(line.strip());
          }
        }
      }
    } catch (Throwable ignored) {
      // A lost log line is harmless; an exception unwinding into libbpf is not.
    }
    return 0;
  }

  static void clear() {
    synchronized (LINES) {
      LINES.clear();
    }
  }

  static List<String> lines() {
    synchronized (LINES) {
      return new ArrayList<>(LINES);
    }
  }

  /** libbpf's first warning since {@link #clear()}, usually the cause; empty if none. */
  static String reason() {
    List<String> lines = lines();
    return lines.isEmpty() ? "" : lines.get(0).replaceFirst("^libbpf: ", "");
  }
}
