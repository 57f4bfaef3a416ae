package dev.polystack.luajit;

import dev.polystack.plugin.api.Bytes;
import dev.polystack.plugin.api.WatchPoint;
import dev.polystack.plugin.api.WatchPointException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Optional;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Lua functions as probe sites, {@code lua:CHUNK:LINE}: the prototype is found by walking the
 * VM's list of GC objects from global_State's gc.root (bounded in objects and bytes), and the
 * watch is its first bytecode instruction, which the interpreter reads once per call of the
 * function (docs/probes.md, "Lua sites"). CHUNK matches the end of the chunk name (without its
 * '@') at a '/' or in full; LINE is any line of the function: the innermost prototype whose
 * lines hold it is watched.
 */
final class WatchSites {
  static final String SCHEME = "lua:";
  /** Objects visited at most: a walk through a larger heap is refused, not run unbounded. */
  static final int MAX_OBJECTS = 4_000_000;
  /** Bytes read at most, object headers and prototypes' fields and names together. */
  static final long MAX_BYTES = 256L << 20;
  /** Walks tried before a list the program keeps changing is given up on. */
  static final int ATTEMPTS = 16;
  /** GCState.state (one byte after currentwhite), from gc.root's offset; GCSsweep frees. */
  private static final int GC_STATE_FROM_ROOT = 17 - 24;
  private static final int GCS_SWEEP = 4;
  /** How long a walk waits for a sweep, which frees listed objects, to end. */
  private static final long SWEEP_WAIT_NANOS = 100_000_000L;
  private static final Pattern SITE = Pattern.compile("lua:(.+):([0-9]{1,9})");
  /** Chunks and lines named when a site matches nothing. */
  private static final int LISTED = 12;

  private WatchSites() {}

  /** The parsed site; empty when {@code site} is not a Lua site. */
  record Site(String chunk, int line) {
    static Optional<Site> parse(String site) throws WatchPointException {
      if (!site.startsWith(SCHEME)) {
        return Optional.empty();
      }
      Matcher m = SITE.matcher(site);
      if (!m.matches()) {
        throw new WatchPointException("'" + site + "' is not a Lua site: write lua:CHUNK:LINE,"
            + " e.g. lua:app.lua:12");
      }
      return Optional.of(new Site(m.group(1), Integer.parseInt(m.group(2))));
    }

    /** The chunk name ends with CHUNK, whole or after a '/'. */
    boolean names(String chunkName) {
      return chunkName.equals(chunk) || chunkName.endsWith("/" + chunk)
          || chunk.startsWith("/") && chunkName.endsWith(chunk);
    }

    @Override
    public String toString() {
      return SCHEME + chunk + ":" + line;
    }
  }

  /** What one walk of the GC list saw. */
  record Walk(List<Protos.Proto> matching, TreeSet<String> chunks, int objects,
      int unreadable) {}

  /**
   * The watch point of {@code site} in the VM at {@code g}.
   *
   * @throws WatchPointException when no function, or several, are there, or the walk could not
   *     finish
   */
  static WatchPoint resolve(TargetReader r, Layout layout, Protos protos, long g, Site site)
      throws WatchPointException {
    Walk w = null;
    for (int attempt = 1; w == null; attempt++) {
      awaitNoSweep(r, layout, g);
      try {
        w = walk(r, layout, protos, g, site);
      } catch (Broken e) {
        if (attempt == ATTEMPTS) {
          throw new WatchPointException(e.getMessage());
        }
      }
    }
    List<Protos.Proto> holding = new ArrayList<>();
    for (Protos.Proto p : w.matching()) {
      if (p.firstLine() <= site.line() && site.line() <= p.firstLine() + p.numLine()) {
        holding.add(p);
      }
    }
    if (holding.isEmpty()) {
      throw new WatchPointException(noFunction(site, w));
    }
    // The innermost: the shortest span; the function defined last among equal spans.
    Protos.Proto best = holding.get(0);
    for (Protos.Proto p : holding) {
      if (p.numLine() < best.numLine()
          || p.numLine() == best.numLine() && p.firstLine() > best.firstLine()) {
        best = p;
      }
    }
    List<Protos.Proto> same = new ArrayList<>();
    for (Protos.Proto p : holding) {
      if (p.numLine() == best.numLine() && p.firstLine() == best.firstLine()) {
        same.add(p);
      }
    }
    if (same.size() > 1) {
      TreeSet<String> names = new TreeSet<>();
      same.forEach(p -> names.add(p.chunk()));
      throw new WatchPointException(site + ": " + same.size() + " functions of " + names
          + " begin on line " + best.firstLine() + " (the chunk is loaded more than once, or"
          + " two functions share the line; prototypes not yet collected count too): name a"
          + " line only one of them holds, or a longer chunk path");
    }
    return new WatchPoint(best.bytecode(), 4, "Lua function at " + best.chunk() + ":"
        + best.firstLine() + " (prototype 0x" + Long.toHexString(best.address())
        + ", first bytecode instruction at 0x" + Long.toHexString(best.bytecode()) + ")");
  }

  /**
   * Walks gc.root's list: every prototype of a chunk {@code site} names, and the names of the
   * chunks seen (bounded), for the message when none holds the line.
   */
  static Walk walk(TargetReader r, Layout layout, Protos protos, long g, Site site)
      throws WatchPointException, Broken {
    long obj;
    try {
      obj = r.u64(g + layout.gcRoot(), "global_state");
    } catch (WalkException e) {
      throw new WatchPointException(site + ": cannot read the LuaJIT VM's object list ("
          + e.getMessage() + ")");
    }
    List<Protos.Proto> matching = new ArrayList<>();
    TreeSet<String> chunks = new TreeSet<>();
    TreeSet<String> chunkNames = new TreeSet<>();
    int objects = 0;
    int unreadable = 0;
    long bytes = 8;
    boolean sawMainThread = false;
    long mainL = g - layout.luaStateSize();
    while (obj != 0) {
      if (++objects > MAX_OBJECTS || bytes > MAX_BYTES) {
        throw new WatchPointException(site + ": the LuaJIT VM has more than "
            + Math.min(objects - 1, MAX_OBJECTS) + " objects (" + (bytes >> 20) + " MiB read):"
            + " the search for the function stopped at its bound; probe while the heap is"
            + " smaller");
      }
      byte[] header;
      try {
        header = r.bytes(obj, 16, "gc_object");
      } catch (WalkException e) {
        throw new Broken(broken(site, objects, unreadable, e.getMessage()));
      }
      bytes += 16;
      int gct = header[Layout.GC_GCT] & 0xff;
      if (gct < Layout.GCT_STR || gct > Layout.GCT_UDATA) {
        throw new Broken(broken(site, objects, unreadable, "object 0x"
            + Long.toHexString(obj) + " has type tag " + gct));
      }
      sawMainThread |= obj == mainL;
      if (gct == Layout.GCT_PROTO) {
        try {
          Protos.Proto p = protos.get(r, obj);
          bytes += 32 + p.chunk().length();
          if (chunks.size() < 4 * LISTED) {
            chunks.add(p.chunk()); // enough to name some in a refusal
          }
          if (site.names(p.chunk())) {
            matching.add(p);
            chunkNames.add(p.chunk());
          }
        } catch (WalkException e) {
          unreadable++;
        }
      }
      obj = Bytes.getLong(header, 0);
    }
    if (!sawMainThread) {
      // The main thread is on every VM's list (its first object): a walk that ended without
      // it followed a freed object's link out of the list.
      throw new Broken(broken(site, objects, unreadable, "the list ended without the main"
          + " lua_State"));
    }
    if (chunkNames.size() > 1) {
      throw new WatchPointException(site + ": " + chunkNames.size() + " chunks end in "
          + site.chunk() + " (" + String.join(", ", limit(chunkNames)) + "): give a"
          + " longer path");
    }
    return new Walk(matching, chunks, objects, unreadable);
  }

  private static String broken(Site site, int objects, int unreadable, String why) {
    return site + ": the LuaJIT VM's object list broke off in each of " + ATTEMPTS + " walks"
        + " (the last after " + objects + " objects: " + why + (unreadable > 0 ? "; "
        + unreadable + " unreadable prototypes" : "") + "): the program's garbage collector"
        + " frees objects faster than polystack reads the list, or this LuaJIT's layout is not"
        + " known; try again when it allocates less";
  }

  /**
   * Waits (bounded) while the collector sweeps: a sweep frees dead objects of the list, and a
   * walk that reaches one breaks off. Other phases only mark, or add objects at the head.
   */
  private static void awaitNoSweep(TargetReader r, Layout layout, long g) {
    long deadline = System.nanoTime() + SWEEP_WAIT_NANOS;
    try {
      while (r.u8(g + layout.gcRoot() + GC_STATE_FROM_ROOT, "global_state") == GCS_SWEEP
          && System.nanoTime() < deadline) {
        Thread.sleep(1);
      }
    } catch (WalkException e) {
      // the walk that follows reports what cannot be read
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** A walk that met an object the program changed under it: worth another walk. */
  static final class Broken extends Exception {
    private static final long serialVersionUID = 1L;

    Broken(String message) {
      super(message, null, false, false);
    }
  }

  /** One line naming what exists near the site: the chunk's functions, or the chunks. */
  private static String noFunction(Site site, Walk w) {
    String tail = w.unreadable() > 0 ? "; " + w.unreadable() + " prototypes were unreadable"
        : "";
    if (!w.matching().isEmpty()) {
      TreeSet<Integer> lines = new TreeSet<>();
      w.matching().forEach(p -> lines.add(p.firstLine()));
      List<String> near = new ArrayList<>();
      for (Integer l : lines.headSet(site.line(), true).descendingSet()) {
        if (near.size() >= LISTED / 2) {
          break;
        }
        near.add(0, Integer.toString(l));
      }
      for (Integer l : lines.tailSet(site.line(), false)) {
        if (near.size() >= LISTED) {
          break;
        }
        near.add(Integer.toString(l));
      }
      return "no Lua function of " + w.matching().get(0).chunk() + " holds line " + site.line()
          + " (functions begin on lines " + String.join(", ", near)
          + (lines.size() > near.size() ? ", ..." : "") + tail + "): give a line inside a"
          + " function";
    }
    return "no Lua chunk " + site.chunk() + " in the LuaJIT VM (" + w.objects() + " objects;"
        + " chunks: " + (w.chunks().isEmpty() ? "none" : String.join(", ", limit(w.chunks())))
        + tail + "): give the end of a chunk's name, as debug.getinfo(f).source shows it";
  }

  private static List<String> limit(Collection<String> names) {
    List<String> out = new ArrayList<>();
    for (String n : names) {
      if (out.size() == LISTED) {
        out.add("...");
        break;
      }
      out.add(n);
    }
    return out;
  }
}
