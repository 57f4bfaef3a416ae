package dev.polystack.plugin.api.kit;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.polystack.plugin.api.Frame;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class LiveStacksTest {
  private static final String TEXT = """
      Process 7

      Thread 7 "luajit" (running)
          fib (/w/account.lua:7)
          main chunk (/w/account.lua:16)
          lua_pcall  (luajit)

      Thread 8 "worker" (running)
          other (/w/other.lua:3)
      """;

  private static Frame lua(String function, String file, int line) {
    return new Frame("luajit", 0, function, file, line, 0, "", Map.of());
  }

  @Test
  void aFrameIsFoundOnlyInItsOwnThreadBelowTheOneBefore() {
    List<String> seven = LiveStacks.thread(TEXT, 7);
    assertEquals(List.of("fib (/w/account.lua:7)", "main chunk (/w/account.lua:16)",
        "lua_pcall  (luajit)"), seven);
    assertEquals(0, LiveStacks.find(seven, 0, lua("fib", "/w/account.lua", 7)));
    assertEquals(1, LiveStacks.find(seven, 1, lua("main chunk", "/w/account.lua", 16)));
    // Out of order, at another line, in another thread, or a native line: not found.
    assertEquals(-1, LiveStacks.find(seven, 2, lua("fib", "/w/account.lua", 7)));
    assertEquals(-1, LiveStacks.find(seven, 0, lua("fib", "/w/account.lua", 8)));
    assertEquals(-1, LiveStacks.find(seven, 0, lua("other", "/w/other.lua", 3)));
    assertEquals(-1, LiveStacks.find(seven, 0, lua("lua_pcall", "", 0)));
    assertEquals(List.of("other (/w/other.lua:3)"), LiveStacks.thread(TEXT, 8));
    assertEquals(List.of(), LiveStacks.thread(TEXT, 9));
  }
}
