package dev.polystack.luajit;

import dev.polystack.plugin.api.ApiVersion;
import dev.polystack.plugin.api.Capability;
import dev.polystack.plugin.api.Inspection;
import dev.polystack.plugin.api.ModuleImage;
import dev.polystack.plugin.api.PluginDescriptor;
import dev.polystack.plugin.api.PluginVersions;
import dev.polystack.plugin.api.RuntimePlugin;
import java.util.Set;

/**
 * The LuaJIT runtime plug-in: recognises LuaJIT 2.1 by content in executables and libraries,
 * whatever their name (statically linked, embedded, stripped, OpenResty builds).
 */
public final class LuaJitPlugin implements RuntimePlugin {

  static final String FRAME_TYPE = "luajit";

  private final PluginDescriptor descriptor =
      new PluginDescriptor(
          "luajit",
          PluginVersions.of(LuaJitPlugin.class),
          ApiVersion.CURRENT,
          FRAME_TYPE,
          Set.of(Capability.DETECT, Capability.DISCOVER_OFFSETS, Capability.WALK_FRAMES,
              Capability.SYMBOLIZE, Capability.JIT_CODE, Capability.CAPTURE_AT_TICK,
              Capability.ALLOCATOR_SITES, Capability.WATCH_SITES),
          "LuaJIT 2.1 (upstream and OpenResty, GC64): Lua, builtin and JIT trace frames with"
              + " names and current lines");

  @Override
  public PluginDescriptor descriptor() {
    return descriptor;
  }

  @Override
  public Inspection inspect(ModuleImage image) {
    return Detection.inspect(image);
  }
}
