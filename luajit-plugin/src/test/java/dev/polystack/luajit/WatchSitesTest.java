package dev.polystack.luajit;

import static dev.polystack.luajit.SparseMemory.put;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.polystack.plugin.api.WatchPoint;
import dev.polystack.plugin.api.WatchPointException;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/**
 * {@code lua:CHUNK:LINE} resolved over a VM's object list laid out as LuaJIT 2.1 (2020-09
 * layout) lays it out: the innermost function holding the line, one-line refusals naming what
 * exists, and a walk bounded and stopped by a broken list.
 */
class WatchSitesTest {
  private static final Layout LAYOUT = Layout.forCurL(368, 96);
  private static final long BASE = 0x10000;
  private static final long G = BASE + 96;
  private static final long MAIN_L = BASE;
  private static final long STRINGS = 0x12000;

  private final SparseMemory m = new SparseMemory();
  private final byte[] heap = m.region(BASE, 0x10000);
  private long nextString = STRINGS;

  /** The VM's list: root, then {@code objects} in order, then the main thread. */
  private void list(long... objects) {
    long root = objects.length == 0 ? MAIN_L : objects[0];
    put(heap, (int) (G + LAYOUT.gcRoot() - BASE), root, 8);
    for (int i = 0; i < objects.length; i++) {
      put(heap, (int) (objects[i] - BASE), i + 1 < objects.length ? objects[i + 1] : MAIN_L, 8);
    }
    heap[(int) (MAIN_L - BASE) + Layout.GC_GCT] = Layout.GCT_THREAD;
  }

  private long proto(long at, String chunk, int firstLine, int numLine) {
    int p = (int) (at - BASE);
    heap[p + Layout.GC_GCT] = Layout.GCT_PROTO;
    put(heap, p + Layout.PT_SIZEBC, 3, 4);
    put(heap, p + Layout.PT_CHUNKNAME, string(chunk), 8);
    put(heap, p + Layout.PT_FIRSTLINE, firstLine, 4);
    put(heap, p + Layout.PT_NUMLINE, numLine, 4);
    put(heap, p + Layout.PT_LINEINFO, at + 0x80, 8);
    return at;
  }

  private long string(String s) {
    long at = nextString;
    byte[] b = s.getBytes(StandardCharsets.UTF_8);
    int p = (int) (at - BASE);
    heap[p + Layout.GC_GCT] = Layout.GCT_STR;
    put(heap, p + LAYOUT.strLen(), b.length, 4);
    System.arraycopy(b, 0, heap, p + Layout.GCSTR_DATA, b.length);
    nextString += 0x40;
    return at;
  }

  private WatchPoint resolve(String site) throws WatchPointException {
    return WatchSites.resolve(new TargetReader(m, LAYOUT), LAYOUT, new Protos(), G,
        WatchSites.Site.parse(site).orElseThrow());
  }

  private void app() {
    list(proto(0x11200, "@/srv/app.lua", 9, 3), proto(0x11100, "@/srv/app.lua", 5, 2),
        proto(0x11000, "@/srv/app.lua", 0, 20), proto(0x11300, "@/srv/myapp.lua", 5, 2));
  }

  @Test
  void aLineWatchesTheFirstInstructionOfTheInnermostFunctionHoldingIt() throws Exception {
    app();
    WatchPoint w = resolve("lua:app.lua:10");
    assertEquals(0x11200 + Layout.PROTO_SIZE, w.address());
    assertEquals(4, w.length());
    assertTrue(w.description().contains("/srv/app.lua:9"), w.description());
    assertEquals(0x11100 + Layout.PROTO_SIZE, resolve("lua:srv/app.lua:5").address());
    assertEquals(0x11000 + Layout.PROTO_SIZE, resolve("lua:/srv/app.lua:14").address());
    assertEquals(0x11300 + Layout.PROTO_SIZE, resolve("lua:myapp.lua:6").address());
  }

  @Test
  void whatMatchesNothingIsNamedWithWhatExists() throws Exception {
    app();
    WatchPointException noLine = assertThrows(WatchPointException.class,
        () -> resolve("lua:app.lua:40"));
    assertTrue(noLine.getMessage().contains("functions begin on lines 0, 5, 9"),
        noLine.getMessage());
    WatchPointException noChunk = assertThrows(WatchPointException.class,
        () -> resolve("lua:pp.lua:5"));
    assertTrue(noChunk.getMessage().contains("chunks: /srv/app.lua, /srv/myapp.lua"),
        noChunk.getMessage());
    assertTrue(assertThrows(WatchPointException.class, () -> resolve("lua:app.lua"))
        .getMessage().contains("lua:CHUNK:LINE"));
    assertTrue(WatchSites.Site.parse("libc.so.6:write").isEmpty());
  }

  @Test
  void twoCopiesOfAFunctionAreRefused() throws Exception {
    list(proto(0x11000, "@app.lua", 5, 2), proto(0x11100, "@app.lua", 5, 2));
    assertTrue(assertThrows(WatchPointException.class, () -> resolve("lua:app.lua:5"))
        .getMessage().contains("2 functions"));
  }

  @Test
  void aBrokenListStopsTheWalkWithOneLine() {
    list(proto(0x11000, "@app.lua", 5, 2), 0x11100);
    heap[0x1100 + Layout.GC_GCT] = 77; // not a GC type
    WatchPointException e = assertThrows(WatchPointException.class,
        () -> resolve("lua:app.lua:5"));
    assertTrue(e.getMessage().contains("broke off in each of 16 walks (the last after 2 objects")
        && !e.getMessage().contains("\n"), e.getMessage());
  }

  @Test
  void aListThatEndsWithoutTheMainThreadLeftTheVmsList() {
    list(proto(0x11000, "@app.lua", 5, 2));
    put(heap, 0x1000, 0, 8); // a freed object's link: the walk ends early
    WatchPointException e = assertThrows(WatchPointException.class,
        () -> resolve("lua:app.lua:5"));
    assertTrue(e.getMessage().contains("ended without the main lua_State"), e.getMessage());
  }

  @Test
  void aCycleEndsAtTheObjectBound() {
    list(proto(0x11000, "@app.lua", 5, 2), proto(0x11100, "@app.lua", 30, 2));
    put(heap, 0x1100, 0x11000, 8); // back to the first: the list never ends
    WatchPointException e = assertThrows(WatchPointException.class,
        () -> resolve("lua:app.lua:5"));
    assertTrue(e.getMessage().contains("more than " + WatchSites.MAX_OBJECTS + " objects"),
        e.getMessage());
  }
}
