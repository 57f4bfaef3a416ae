package dev.polystack.host.session;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;

import dev.polystack.host.memory.ProcessMemory;
import dev.polystack.host.modules.ModuleOpener;
import dev.polystack.host.plugins.PluginGuard;
import dev.polystack.host.plugins.PluginLoader;
import dev.polystack.host.proc.ProcFs;
import dev.polystack.host.process.ModuleTable;
import dev.polystack.host.process.TargetProcess;
import dev.polystack.host.sampling.RawFrame;
import dev.polystack.host.sampling.RawStack;
import dev.polystack.plugin.api.Frame;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The cache of named native frames, filled past {@link FrameNamer#MAX_CACHED} frames. */
class FrameNamerTest {

  private static Frame named(FrameNamer namer, ModuleTable table, long pc) {
    return namer.name(new RawStack(List.of(new RawFrame.Native(pc, true)), List.of()), table)
        .get(0);
  }

  @Test
  void moreFramesThanCachedEvictTheLeastRecentlyUsed() throws Exception {
    ModuleTable table;
    // A process never refreshed has the empty table: every PC is outside any module.
    try (TargetProcess target = new TargetProcess(1, ProcFs.system(), new ModuleOpener(),
        ProcessMemory.of(1), new PluginLoader().load(List.of()), new PluginGuard(w -> { }),
        w -> { })) {
      table = target.table();
    }
    FrameNamer namer = new FrameNamer();
    List<Frame> frames = new ArrayList<>();
    for (int i = 0; i <= FrameNamer.MAX_CACHED; i++) {
      frames.add(named(namer, table, 0x10000L + 16L * i));
    }
    int last = FrameNamer.MAX_CACHED;
    assertSame(frames.get(last), named(namer, table, 0x10000L + 16L * last),
        "a recent frame is shared from the cache");
    Frame again = named(namer, table, 0x10000L);
    assertNotSame(frames.get(0), again, "the least recently used frame was evicted");
    assertEquals(frames.get(0), again, "and is named the same again");
    assertSame(again, named(namer, table, 0x10000L), "then cached again");
  }
}
