package dev.polystack.e2e;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.function.Predicate;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** A folded profile ({@code root;...;leaf COUNT} per line) read back for assertions. */
record FoldedStacks(List<Stack> stacks) {

  /** One line: frames root first, and how many samples had exactly this stack. */
  record Stack(List<String> frames, long count) {
    int indexOf(Predicate<String> frame) {
      for (int i = 0; i < frames.size(); i++) {
        if (frame.test(frames.get(i))) {
          return i;
        }
      }
      return -1;
    }

    boolean has(Predicate<String> frame) {
      return indexOf(frame) >= 0;
    }

    /** The Lua frames of {@code chunk} in this stack, root first. */
    List<LuaFrame> luaFrames(String chunk) {
      List<LuaFrame> lua = new ArrayList<>();
      for (String f : frames) {
        LuaFrame parsed = LuaFrame.parse(f);
        if (parsed != null && parsed.chunk().equals(chunk)) {
          lua.add(parsed);
        }
      }
      return lua;
    }

    @Override
    public String toString() {
      return String.join(";", frames) + " " + count;
    }
  }

  /** A Lua frame as polystack renders it: {@code NAME (CHUNK:LINE)}. */
  record LuaFrame(String name, String chunk, int line) {
    private static final Pattern FORM = Pattern.compile("(.+) \\((.+):(\\d+)\\)");

    static LuaFrame parse(String frame) {
      Matcher m = FORM.matcher(frame);
      return m.matches() ? new LuaFrame(m.group(1), m.group(2), Integer.parseInt(m.group(3)))
          : null;
    }
  }

  static FoldedStacks read(Path file) throws IOException {
    List<Stack> out = new ArrayList<>();
    for (String line : Files.readAllLines(file)) {
      if (line.isBlank()) {
        continue;
      }
      int space = line.lastIndexOf(' ');
      out.add(new Stack(List.of(line.substring(0, space).split(";")),
          Long.parseLong(line.substring(space + 1))));
    }
    return new FoldedStacks(out);
  }

  static FoldedStacks merge(Collection<FoldedStacks> all) {
    return new FoldedStacks(all.stream().flatMap(f -> f.stacks().stream()).toList());
  }

  long samples() {
    return count(s -> true);
  }

  long count(Predicate<Stack> which) {
    return stacks.stream().filter(which).mapToLong(Stack::count).sum();
  }

  List<Stack> where(Predicate<Stack> which) {
    return stacks.stream().filter(which).toList();
  }

  /** The heaviest stacks first, for failure messages. */
  String top(int n) {
    StringBuilder sb = new StringBuilder();
    stacks.stream().sorted((a, b) -> Long.compare(b.count(), a.count())).limit(n)
        .forEach(s -> sb.append("\n  ").append(s));
    return sb.toString();
  }
}
