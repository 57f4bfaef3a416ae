package dev.polystack.host.sampling;

import dev.polystack.host.snapshot.MemoryImage;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

/**
 * The corruptions of {@link LuaJitCorruptionTest}: one to four per case, each aimed at a read
 * the plug-in made (or, one time in seven, at any recorded read, native unwinder's included).
 * Only a seeded {@link SplittableRandom} decides, so a case is reproducible from its seed.
 */
final class Corruptions {
  /** Where unmapped pointers go: far from every recorded range, still canonical user space. */
  static final long UNMAPPED = 0x0000_6000_0000_0000L;

  private Corruptions() {}

  /** Lays corruption over the memories and says what it did (for a failure message). */
  static String apply(SplittableRandom rnd, CorruptibleMemory process,
      List<CorruptibleMemory.Span> processTargets, Map<Integer, CorruptibleMemory> threads,
      Map<Integer, List<CorruptibleMemory.Span>> threadTargets) {
    int n = rnd.nextInt(10) < 7 ? 1 : 2 + rnd.nextInt(3);
    Map<CorruptibleMemory, List<CorruptibleMemory.Patch>> patches = new LinkedHashMap<>();
    Map<CorruptibleMemory, List<CorruptibleMemory.Hole>> holes = new LinkedHashMap<>();
    List<Integer> tids = new ArrayList<>(threads.keySet());
    StringBuilder what = new StringBuilder();
    for (int k = 0; k < n; k++) {
      CorruptibleMemory memory;
      List<CorruptibleMemory.Span> targets;
      String label;
      if (!processTargets.isEmpty() && rnd.nextInt(5) == 0) {
        memory = process;
        targets = processTargets;
        label = "process";
      } else {
        int tid = tids.get(rnd.nextInt(tids.size()));
        memory = threads.get(tid);
        targets = threadTargets.get(tid);
        label = "thread " + tid;
      }
      CorruptibleMemory.Span span = pick(rnd, memory, targets);
      if (span == null) {
        continue;
      }
      what.append(k == 0 ? "" : "; ").append(label).append(' ');
      int kind = rnd.nextInt(100);
      if (kind < 15) {
        holes.computeIfAbsent(memory, m -> new ArrayList<>()).add(hole(rnd, span, what));
      } else {
        patches.computeIfAbsent(memory, m -> new ArrayList<>())
            .add(patch(rnd, kind, memory, span, targets, what));
      }
    }
    patches.forEach((m, p) -> m.corrupt(p, holes.getOrDefault(m, List.of())));
    holes.forEach((m, h) -> {
      if (!patches.containsKey(m)) {
        m.corrupt(List.of(), h);
      }
    });
    return what.toString();
  }

  private static CorruptibleMemory.Span pick(SplittableRandom rnd, CorruptibleMemory memory,
      List<CorruptibleMemory.Span> targets) {
    if (targets.isEmpty() || rnd.nextInt(7) == 0) {
      List<MemoryImage.Read> reads = memory.image().reads().stream()
          .filter(r -> !r.fault()).toList();
      if (reads.isEmpty()) {
        return targets.isEmpty() ? null : targets.get(rnd.nextInt(targets.size()));
      }
      MemoryImage.Read r = reads.get(rnd.nextInt(reads.size()));
      return new CorruptibleMemory.Span(r.address(), r.got());
    }
    return targets.get(rnd.nextInt(targets.size()));
  }

  /** A read cut short inside the span, or the whole span unreadable. */
  private static CorruptibleMemory.Hole hole(SplittableRandom rnd, CorruptibleMemory.Span span,
      StringBuilder what) {
    long start = rnd.nextBoolean() ? span.address()
        : span.address() + rnd.nextInt(Math.max(1, span.length()));
    what.append("unreadable from 0x").append(Long.toHexString(start));
    return new CorruptibleMemory.Hole(start, start + (1 << 20));
  }

  private static CorruptibleMemory.Patch patch(SplittableRandom rnd, int kind,
      CorruptibleMemory memory, CorruptibleMemory.Span span,
      List<CorruptibleMemory.Span> targets, StringBuilder what) {
    if (kind < 45 || span.length() < 4) {
      // Bit flips: one bit, or several in one word.
      int off = rnd.nextInt(span.length());
      int width = Math.min(8, span.length() - off);
      byte[] b = original(memory, span.address() + off, width);
      int flips = kind < 35 ? 1 : 2 + rnd.nextInt(6);
      for (int f = 0; f < flips; f++) {
        int bit = rnd.nextInt(8 * width);
        b[bit / 8] ^= (byte) (1 << (bit % 8));
      }
      what.append(flips).append(" bit flip(s) at 0x").append(Long.toHexString(span.address()
          + off));
      return new CorruptibleMemory.Patch(span.address() + off, b);
    }
    if (kind < 62 || span.length() < 8) {
      long at = alignedIn(rnd, span, 4);
      int v = switch (rnd.nextInt(6)) {
        case 0 -> 0;
        case 1 -> -1;
        case 2 -> Integer.MAX_VALUE;
        case 3 -> Integer.MIN_VALUE;
        case 4 -> rnd.nextInt(300);
        default -> rnd.nextInt();
      };
      what.append("u32 ").append(v).append(" at 0x").append(Long.toHexString(at));
      return new CorruptibleMemory.Patch(at, le(v, 4));
    }
    long at = alignedIn(rnd, span, 8);
    long original = toLong(original(memory, at, 8));
    long v;
    String why;
    switch (rnd.nextInt(10)) {
      case 0 -> { v = 0; why = "null"; }
      case 1 -> { v = -1; why = "all ones"; }
      case 2 -> { v = UNMAPPED + (rnd.nextLong(1L << 40) & ~7L); why = "unmapped pointer"; }
      case 3 -> {
        CorruptibleMemory.Span other = targets.get(rnd.nextInt(targets.size()));
        v = other.address() + 8L * rnd.nextInt(8);
        why = "pointer to another structure read (cycle)";
      }
      case 4 -> {
        v = at + 8L * (rnd.nextInt(9) - 4);
        why = "pointer at itself or a neighbour (cycle)";
      }
      case 5 -> {
        v = ((long) (1 + rnd.nextInt(64)) << 3) | rnd.nextInt(8);
        why = "small frame-link-like value";
      }
      case 6 -> { v = original | (rnd.nextBoolean() ? Long.MIN_VALUE : 1L << 47); why =
          "non-canonical"; }
      case 7 -> {
        CorruptibleMemory.Span other = targets.get(rnd.nextInt(targets.size()));
        v = ((long) (rnd.nextInt(16) ^ 0x1fff) << 47) | other.address();
        why = "tagged pointer to another structure";
      }
      case 8 -> { v = original + 8L * (rnd.nextInt(33) - 16); why = "pointer moved"; }
      default -> { v = rnd.nextLong(); why = "random"; }
    }
    what.append(why).append(" 0x").append(Long.toHexString(v)).append(" at 0x")
        .append(Long.toHexString(at));
    return new CorruptibleMemory.Patch(at, le(v, 8));
  }

  /** An address in the span aligned to {@code align} with {@code align} bytes inside it. */
  private static long alignedIn(SplittableRandom rnd, CorruptibleMemory.Span span, int align) {
    long first = (span.address() + align - 1) & -align;
    long last = (span.address() + span.length() - align) & -align;
    if (last < first) {
      return span.address();
    }
    return first + align * rnd.nextLong((last - first) / align + 1);
  }

  private static byte[] original(CorruptibleMemory memory, long address, int length) {
    byte[] b = new byte[length];
    memory.image().copy(address, b, 0, length);
    return b;
  }

  private static long toLong(byte[] b) {
    long v = 0;
    for (int i = 7; i >= 0; i--) {
      v = (v << 8) | (b[i] & 0xff);
    }
    return v;
  }

  private static byte[] le(long v, int width) {
    byte[] b = new byte[width];
    for (int i = 0; i < width; i++) {
      b[i] = (byte) (v >>> (8 * i));
    }
    return b;
  }
}
