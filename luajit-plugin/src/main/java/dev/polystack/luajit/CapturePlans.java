package dev.polystack.luajit;

import dev.polystack.plugin.api.CapturePlan;
import dev.polystack.plugin.api.Register;

/**
 * What a LuaJIT walk reads that changes between ticks, as a capture plan for one VM: the
 * global_State fields (cur_L, vmstate, jit_base) with the main lua_State before them, the
 * current lua_State, and the top of its Lua stack; and, when the current lua_State is a
 * coroutine that Lua resumed (coroutine.resume or a wrap function, whose interpreter C frame
 * lies right above the one vm_resume made for the coroutine), the resumer's lua_State and the
 * top of its stack, which change at every resume. Prototypes, bytecode, line tables, strings
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
  /** The resumer's Lua stack copied under its base: its innermost frames (512 slots). */
  static final int RESUMER_STACK_BYTES = 8 << 10;
  /** A function object's header, as far as the walk reads it (type, ffid, bytecode PC). */
  static final int FUNCTION_BYTES = 64;
  /** CFRAME_RAWMASK: L->cframe's low bits flag a resumed (1) or fast-function (2) C frame. */
  static final long CFRAME_RAWMASK = ~3L;

  private CapturePlans() {}

  /**
   * The plan for the VM whose global_State is at {@code g}. It stops (and the walk reads live)
   * unless G->cur_L points back at G. The Lua stack's top is the highest of L->top, L->base,
   * G->jit_base (on a trace) and rdx (BASE in the interpreter) that lies inside the stack.
   */
  static CapturePlan forVm(long g, Layout layout) {
    int gBytes = Math.max(layout.vmstate(), Math.max(layout.curL(), layout.jitBase())) + 8;
    CapturePlan.Builder b = CapturePlan.builder()
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
        .max("hi", "hi", "c");
    stackTop(b, LUA_STACK_BYTES, "lua_stack")
        // The resumer ("end" from here): SAVE_L of the C frame above L's, when that is an
        // interpreter frame of another lua_State of this VM; a C caller's frame there (or no
        // cframe at all: the load at 96 fails) stops the plan with nothing more copied.
        .load("t", "L", Layout.L_CFRAME, 8)
        .and("t", "t", CFRAME_RAWMASK)
        .load("end", "t", Layout.CFRAME_SIZE + Layout.CF_SAVE_L, 8)
        .checkNotEquals("end", "L")
        .load("t", "end", Layout.L_GLREF, 8)
        .checkEquals("t", "G")
        .copy("end", 0, layout.luaStateSize(), "resumer_state")
        .load("stack", "end", Layout.L_STACK, 8)
        .load("hi", "end", Layout.L_TOP, 8)
        .load("t", "end", Layout.L_BASE, 8)
        // The function the resumer is in (a wrap function is a new closure per coroutine, so
        // it may be freed before a walk after the tick could read it).
        .load("c", "t", -16, 8)
        .and("c", "c", Layout.GCVMASK)
        .copy("c", 0, FUNCTION_BYTES, "resumer_function")
        .max("hi", "hi", "t");
    return stackTop(b, RESUMER_STACK_BYTES, "resumer_stack").build();
  }

  /**
   * Copies {@code bytes} of a Lua stack under slot "hi" (its highest known frame) plus
   * {@link #ABOVE_BASE}, not below slot "stack" (its first slot).
   */
  private static CapturePlan.Builder stackTop(CapturePlan.Builder b, int bytes, String label) {
    return b.add("hi", "hi", ABOVE_BASE)
        .add("c", "hi", -bytes)
        .max("c", "c", "stack")
        .subtract("len", "hi", "c")
        .copy("c", 0, "len", bytes, label);
  }
}
