package dev.polystack.luajit;

import dev.polystack.plugin.api.AllocatorSite;
import dev.polystack.plugin.api.Bytes;
import dev.polystack.plugin.api.Mapping;
import dev.polystack.plugin.api.MemoryReadException;
import dev.polystack.plugin.api.ProcessContext;
import dev.polystack.plugin.api.RemoteMemory;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.function.Consumer;
import java.util.function.LongPredicate;

/**
 * Finds a VM's global_State without a walk, for callers that need G before any sample (an
 * allocation profile probes G->allocf before the first allocation is seen). GG_State starts
 * with the main lua_State, whose glref points just past it at G: a lua_State at p with
 * {@code *(p + 16) == p + sizeof(lua_State)} and the thread type tag is a candidate, confirmed
 * as a walk confirms G. Searched in the process's writable anonymous memory (the allocator's
 * first segment, or the heap), smallest mappings first, within a byte budget per search; a map
 * searched in vain is not searched again until it changes. Also reads each VM's allocator
 * function, G->allocf.
 */
final class StateSearch {
  /** Bytes read per search at most: bounds its cost in a process with a large heap. */
  static final long BUDGET = 256L << 20;
  private static final int CHUNK = RemoteMemory.MAX_READ;

  private List<Mapping> searchedInVain;

  /**
   * A global_State address of the process that {@code isGlobalState} confirms, or 0 when none
   * was found (or the map is the one last searched in vain).
   */
  long find(ProcessContext process, int luaStateSize, LongPredicate isGlobalState) {
    List<Mapping> maps = process.mappings();
    if (maps.equals(searchedInVain)) {
      return 0;
    }
    long budget = BUDGET;
    List<Mapping> candidates = maps.stream()
        .filter(m -> m.readable() && m.writable() && !m.executable())
        .filter(m -> m.isAnonymous() || m.path().equals("[heap]"))
        .filter(m -> Long.compareUnsigned(m.end(), TargetReader.USER_MAX) <= 0)
        .sorted(Comparator.comparingLong(m -> m.end() - m.start()))
        .toList();
    byte[] buffer = new byte[CHUNK];
    for (Mapping m : candidates) {
      // Chunks overlap by 24 bytes so a candidate's glref is never cut off.
      for (long at = m.start(); at < m.end() - 24 && budget > 0; at += CHUNK - 24) {
        int want = (int) Math.min(CHUNK, m.end() - at);
        int n;
        try {
          n = process.memory().read(at, buffer, 0, want);
        } catch (MemoryReadException e) {
          break; // unmapped since the map was read, or guarded: the next mapping
        }
        budget -= n;
        for (int i = 0; i + 24 <= n; i += 8) {
          long p = at + i;
          if ((buffer[i + Layout.GC_GCT] & 0xff) == Layout.GCT_THREAD
              && Bytes.getLong(buffer, i + Layout.L_GLREF) == p + luaStateSize
              && isGlobalState.test(p + luaStateSize)) {
            return p + luaStateSize;
          }
        }
        if (n < want) {
          break;
        }
      }
    }
    searchedInVain = maps;
    return 0;
  }

  /**
   * G->allocf of each VM at {@code gs}, distinct, that points into executable memory; a value
   * that does not, or cannot be read, is counted by its reason.
   */
  static List<AllocatorSite> allocators(List<Long> gs, TargetReader r, Layout layout,
      List<Mapping> maps, Consumer<String> count) {
    List<AllocatorSite> out = new ArrayList<>();
    for (long g : gs) {
      try {
        long f = r.u64(g + layout.allocf(), "global_state");
        if (maps.stream().noneMatch(m -> m.executable() && m.contains(f))) {
          count.accept("allocf_not_code");
        } else if (out.stream().noneMatch(s -> s.address() == f)) {
          out.add(new AllocatorSite(f, AllocatorSite.Convention.LUA_ALLOC, "lua_Alloc"));
        }
      } catch (WalkException e) {
        count.accept(e.reason());
      }
    }
    return out;
  }
}
