package dev.polystack.luajit;

import dev.polystack.plugin.api.CapturePlan;
import dev.polystack.plugin.api.Register;

/**
 * What a LuaJIT walk reads that changes between ticks, as a capture plan for one VM: the
 * global_State fields (cur_L, vmstate, jit_base) with the main lua_State before them, the
 * current lua_State, and the top of its Lua stack. Prototypes, bytecode, line tables, strings
 * and traces stay live reads (they do not change while reachable); closures are read live too,
 * since no bounded plan can follow every frame's function.
 */
final class CapturePlans {
  /** The Lua stack copied under its highest frame: 16 KiB is ~1000 slots, deep recursion. */
  static final int LUA_STACK_BYTES = CapturePlan.MAX_COPY_BYTES;
  /** Slots above the highest known base that the current frame may use before L->top syncs. */
  static final int ABOVE_BASE = 256;
  /** How far past L->maxstack a base may lie (LJ_STACK_EXTRA slots and then some). */
  static final int PAST_MAXSTACK = 1024;

  private CapturePlans() {}

  /**
   * The plan for the VM whose global_State is at {@code g}. It stops (and the walk reads live)
   * unless G->cur_L points back at G. The Lua stack's top is the highest of L->top, L->base,
   * G->jit_base (on a trace) and rdx (BASE in the interpreter) that lies inside the stack.
   */
  static CapturePlan forVm(long g, Layout layout) {
    int gBytes = Math.max(layout.vmstate(), Math.max(layout.curL(), layout.jitBase())) + 8;
    return CapturePlan.builder()
        .constant("G", g)
        .load("L", "G", layout.curL(), 8)
        .load("t", "L", Layout.L_GLREF, 8)
        .checkEquals("t", "G")
        // GG_State: the main lua_State sits right before G; the walk checks its glref too.
        .copy("G", -layout.luaStateSize(), layout.luaStateSize() + gBytes, "global_state")
        .copy("L", 0, layout.luaStateSize(), "lua_state")
        .load("stack", "L", Layout.L_STACK, 8)
        .load("hi", "L", Layout.L_TOP, 8)
        .load("t", "L", Layout.L_BASE, 8)
        .max("hi", "hi", "t")
        .load("end", "L", Layout.L_MAXSTACK, 8)
        .add("end", "end", PAST_MAXSTACK)
        .load("t", "G", layout.jitBase(), 8)
        .add("c", "hi", 0)
        .keepIfInRange("c", "t", "stack", "end")
        .max("hi", "hi", "c")
        .register("t", Register.RDX)
        .add("c", "hi", 0)
        .keepIfInRange("c", "t", "stack", "end")
        .max("hi", "hi", "c")
        .add("hi", "hi", ABOVE_BASE)
        .add("c", "hi", -LUA_STACK_BYTES)
        .max("c", "c", "stack")
        .subtract("len", "hi", "c")
        .copy("c", 0, "len", LUA_STACK_BYTES, "lua_stack")
        .build();
  }
}
