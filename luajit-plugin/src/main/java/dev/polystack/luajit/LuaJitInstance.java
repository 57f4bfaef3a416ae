package dev.polystack.luajit;

import dev.polystack.plugin.api.AllocatorSite;
import dev.polystack.plugin.api.CapturePlan;
import dev.polystack.plugin.api.CodeRange;
import dev.polystack.plugin.api.DiscoveredOffset;
import dev.polystack.plugin.api.Frame;
import dev.polystack.plugin.api.ProcessContext;
import dev.polystack.plugin.api.Provenance;
import dev.polystack.plugin.api.Register;
import dev.polystack.plugin.api.Registers;
import dev.polystack.plugin.api.RuntimeInstance;
import dev.polystack.plugin.api.SampleAttributes;
import dev.polystack.plugin.api.SampleRequest;
import dev.polystack.plugin.api.SampleWalk;
import dev.polystack.plugin.api.SampleWalker;
import dev.polystack.plugin.api.ThreadContext;
import dev.polystack.plugin.api.WalkResult;
import dev.polystack.plugin.api.WatchPoint;
import dev.polystack.plugin.api.WatchPointException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;

/**
 * LuaJIT attached to one process: finds each VM's global_State from the interpreter's DISPATCH
 * register, walks every lua_State the native stack passes through, and unwinds JIT traces so the
 * native callers below them stay visible. Several VMs per process are kept apart by their G.
 */
final class LuaJitInstance implements RuntimeInstance {
  static final long G2DISP_MIN = 0xd00;
  static final long G2DISP_MAX = 0x1200;
  static final int MAX_VMS = 16;

  /** vmstate values (lj_obj.h) and the letters jit.p uses for them. */
  static final int VM_INTERP = -1;

  /**
   * The leaf frame's attribute (and a counter) saying a trace inlined frames above it that its
   * snapshot did not allow to rebuild; the value is why.
   */
  static final String INLINE_UNKNOWN_ATTRIBUTE = "luajit.inline_unknown";
  static final String INLINE_UNKNOWN = "inline_unknown";

  private final LuaJitBinary binary;
  private final Layout layout;
  private final CodeRange interpreter;
  private final ProcessContext process;
  private final Protos protos = new Protos();
  /**
   * Lines and inferred names by prototype (identity-checked on every read) and position: a hot
   * loop asks the same questions in every sample, and each answer costs target reads.
   */
  private final Map<PosKey, Integer> lines = new BoundedCache<>(1 << 16);
  private final Map<PosKey, String> names = new BoundedCache<>(1 << 16);

  /**
   * By the prototype's identity (Protos hands out one object per live prototype), and written
   * out: a record's generated methods run through method handles the host's C1 does not inline,
   * and this key is hashed for every Lua frame of every sample.
   */
  private record PosKey(Protos.Proto proto, int pos, int slot) {
    @Override
    public boolean equals(Object o) {
      return o instanceof PosKey k && k.proto == proto && k.pos == pos && k.slot == slot;
    }

    @Override
    public int hashCode() {
      return (System.identityHashCode(proto) * 31 + pos) * 31 + slot;
    }
  }

  private static final String NO_NAME = "";
  /** Trace numbers are 16-bit; this bounds the map should a target report garbage. */
  private static final int MAX_CACHED_ATTRIBUTES = 1 << 16;
  private final Map<Integer, SampleAttributes> attributesByVmstate = new HashMap<>();
  private final FastFunctions fastFunctions;
  private final Map<String, Long> counters = new TreeMap<>();
  /** Validated global_State addresses, most recently used last. */
  private final LinkedHashMap<Long, Vm> vms = new LinkedHashMap<>(4, 0.75f, true);
  private long g2disp = -1;
  private final StateSearch stateSearch = new StateSearch();

  /** The capture plan last handed out, for the VM at {@link #planG}; rebuilt when G changes. */
  private CapturePlan plan = CapturePlan.NONE;
  private long planG;

  /** One VM of the process and its trace snapshot. */
  private static final class Vm {
    final long g;
    long traceArray = -1;
    Traces traces = Traces.NONE;
    /** Positions on the traces of {@link #traces}: replaced with them. */
    TraceSnapshots snapshots = new TraceSnapshots();

    Vm(long g) {
      this.g = g;
    }
  }

  /**
   * What one sample's walker remembers between the native frames of the sample. Segments are
   * counted per lua_State: the instance's native frames interleave the C entries of several
   * coroutines.
   */
  private static final class SampleState {
    final Map<Long, LuaStack> stacks = new HashMap<>();
    final Map<Long, Integer> nextSegment = new HashMap<>();
    final Set<Long> walkedCframes = new HashSet<>();
    Integer leafVmstate;
    /** Why frames the leaf trace inlined could not be rebuilt, or null. */
    String inlineUnknown;
    boolean discoveryDone;
  }

  LuaJitInstance(LuaJitBinary binary, ProcessContext process, long bias) {
    this.binary = binary;
    this.layout = binary.layout();
    this.interpreter = binary.interpreter().shift(bias);
    this.process = process;
    this.fastFunctions = FastFunctions.forStateSize(layout.luaStateSize());
  }

  /**
   * One sample's walker: the sample's state lives in it, and the host calls it
   * holding this instance's monitor, which guards the VMs, traces and caches it shares with the
   * synchronized methods below.
   */
  @Override
  public SampleWalker openSample(ThreadContext thread) {
    SampleState st = new SampleState();
    return new SampleWalker() {
      @Override
      public Registers unwindCaller(Registers frame) {
        return LuaJitInstance.this.unwindCaller(thread, frame, st);
      }

      @Override
      public SampleWalk walk(SampleRequest request) {
        Map<Integer, WalkResult> out = new HashMap<>();
        for (SampleRequest.OwnedFrame f : request.frames()) {
          WalkResult r = walkFrame(request.thread(), f.registers(), f.leaf(), st);
          if (r != null) {
            out.put(f.nativeIndex(), r);
          }
        }
        return new SampleWalk(out, st.leafVmstate != null ? vmstateAttributes(st.leafVmstate)
            : SampleAttributes.EMPTY);
      }
    };
  }

  /**
   * The Lua frames behind one native frame of the sample, interpreter or trace; null where it
   * stays native.
   */
  private WalkResult walkFrame(ThreadContext thread, Registers regs, boolean leaf,
      SampleState st) {
    TargetReader r = new TargetReader(thread.memory(), layout);
    long pc = regs.pc();
    try {
      Traces.Trace trace = null;
      Vm vm;
      long cframe;
      if (interpreter.contains(pc)) {
        cframe = regs.sp();
        if (st.walkedCframes.contains(cframe)) {
          return new WalkResult.Frames(List.of()); // walked already, from the trace above it
        }
        vm = findVm(r, regs);
      } else {
        vm = vmWithTraceAt(pc);
        if (vm == null) {
          return null;
        }
        trace = vm.traces.at(pc);
        cframe = regs.sp() + 16 + trace.spAdjust();
      }
      long L = luaState(r, vm.g, cframe, leaf);
      LuaStack stack = st.stacks.get(L);
      if (stack == null) {
        stack = walkInnermost(r, vm, L, regs, leaf, trace, cframe, st);
        st.stacks.put(L, stack);
      }
      int k = st.nextSegment.merge(L, 1, Integer::sum) - 1;
      if (k >= stack.segments()) {
        return null;
      }
      int[] range = stack.segment(k);
      boolean last = k == stack.segments() - 1;
      if (range[0] == range[1]) {
        if (last && stack.error() != null) {
          count(stack.error());
          return new WalkResult.Failed(stack.error(), List.of());
        }
        return null;
      }
      List<Frame> frames = materialize(r, stack, range, cframe,
          k == 0 && st.leafVmstate != null ? st.inlineUnknown : null);
      if (last && stack.error() != null) {
        count(stack.error());
        return new WalkResult.Failed(stack.error(), frames);
      }
      return new WalkResult.Frames(frames);
    } catch (WalkException e) {
      count(e.reason());
      return new WalkResult.Failed(e.reason(), List.of());
    }
  }

  private Registers unwindCaller(ThreadContext thread, Registers frame, SampleState st) {
    if (interpreter.contains(frame.pc())) {
      return helperCaller(thread, frame, st);
    }
    Vm vm = vmWithTraceAt(frame.pc());
    if (vm == null) {
      vm = discoverTraceAt(thread, frame, st);
      if (vm == null) {
        return null;
      }
    }
    Traces.Trace trace = vm.traces.at(frame.pc());
    // A trace runs on the interpreter's C frame, below it by 16 (JLOOP) + spadjust bytes; the
    // interpreter's own CFI (CFA = rsp + 80) then leads on to its native callers.
    long cframe = frame.sp() + 16 + trace.spAdjust();
    st.walkedCframes.add(cframe);
    return frame.with(Register.RSP, cframe).with(Register.RIP, interpreter.start() + 1);
  }

  /**
   * VM helpers such as lj_vm_floor or vm_mod are entered by a call without a prologue, so the
   * interpreter's CFI (CFA = rsp + 80) is off by the return address there. Recognised by a
   * return address into the VM at [rsp] with a valid SAVE_L 8 bytes higher: pop it, and let the
   * interpreter frame above be walked as the same C frame (it is dropped from the stack, since
   * the helper frame already carries its Lua frames). Null means: the CFI is right here.
   */
  private Registers helperCaller(ThreadContext thread, Registers frame, SampleState st) {
    TargetReader r = new TargetReader(thread.memory(), layout);
    try {
      long ra = r.u64(frame.sp(), "stack");
      if (!interpreter.contains(ra)) {
        return null;
      }
      long cframe = frame.sp() + 8;
      long L = r.u64(cframe + Layout.CF_SAVE_L, "cframe");
      for (Vm vm : vms.values()) {
        if (isThreadOf(r, L, vm.g, false)) {
          st.walkedCframes.add(cframe);
          return frame.with(Register.RSP, cframe).with(Register.RIP, ra);
        }
      }
      return null;
    } catch (WalkException e) {
      return null;
    }
  }

  /**
   * A PC in no known code may be a trace compiled since the host last asked for code ranges:
   * DISPATCH is in r14 on traces too, so find the VM and re-read its traces, at most once per
   * sample since the thread is stopped meanwhile.
   */
  private Vm discoverTraceAt(ThreadContext thread, Registers frame, SampleState st) {
    if (st.discoveryDone) {
      return null;
    }
    st.discoveryDone = true;
    TargetReader r = new TargetReader(thread.memory(), layout);
    try {
      Vm vm = findVm(r, frame);
      refreshTraces(r, vm);
      return vm.traces.at(frame.pc()) != null ? vm : null;
    } catch (WalkException e) {
      return null;
    }
  }

  /** The plan for the VM walked last; none until a walk validated a global_State. */
  @Override
  public synchronized CapturePlan capturePlan() {
    if (vms.isEmpty()) {
      return CapturePlan.NONE;
    }
    long g = 0;
    for (long candidate : vms.keySet()) {
      g = candidate; // access order: the last is the most recently used
    }
    if (g != planG) {
      plan = CapturePlans.forVm(g, layout);
      planG = g;
    }
    return plan;
  }

  /**
   * G->allocf of each VM known, walked or found by {@link StateSearch} (before any walk): the
   * function every allocation, resize and free of the VM goes through (docs/allocations.md).
   */
  @Override
  public synchronized List<AllocatorSite> allocatorSites() {
    TargetReader r = new TargetReader(process.memory(), layout);
    if (vms.isEmpty()) {
      long g = stateSearch.find(process, layout.luaStateSize(), c -> isGlobalState(r, c));
      if (g == 0) {
        return List.of();
      }
      vm(g);
    }
    return StateSearch.allocators(List.copyOf(vms.keySet()), r, layout, process.mappings(),
        this::count);
  }

  /**
   * A Lua function's first bytecode instruction, for {@code lua:CHUNK:LINE} sites: searched in
   * each VM known, or found by {@link StateSearch} before any walk (docs/probes.md, "Lua
   * sites").
   */
  @Override
  public synchronized Optional<WatchPoint> watchPoint(String site) throws WatchPointException {
    Optional<WatchSites.Site> parsed = WatchSites.Site.parse(site);
    if (parsed.isEmpty()) {
      return Optional.empty();
    }
    TargetReader r = new TargetReader(process.memory(), layout);
    if (vms.isEmpty()) {
      long g = stateSearch.find(process, layout.luaStateSize(), c -> isGlobalState(r, c));
      if (g == 0) {
        throw new WatchPointException(site + ": no LuaJIT VM found in process " + process.pid()
            + " (its lua_State was not in the first " + (StateSearch.BUDGET >> 20) + " MiB of"
            + " its writable memory): probe once it has created its VM");
      }
      vm(g);
    }
    WatchPointException first = null;
    for (long g : List.copyOf(vms.keySet())) {
      try {
        return Optional.of(WatchSites.resolve(r, layout, protos, g, parsed.get()));
      } catch (WatchPointException e) {
        first = first == null ? e : first;
      }
    }
    throw first;
  }

  @Override
  public synchronized List<CodeRange> dynamicCodeRanges() {
    List<CodeRange> out = new ArrayList<>();
    TargetReader r = new TargetReader(process.memory(), layout);
    for (Vm vm : vms.values()) {
      refreshTraces(r, vm);
      out.addAll(vm.traces.ranges());
    }
    return out;
  }

  @Override
  public synchronized List<DiscoveredOffset> validatedOffsets() {
    List<DiscoveredOffset> out = new ArrayList<>();
    if (g2disp > 0) {
      out.add(new DiscoveredOffset("GG_G2DISP", g2disp, Provenance.RUNTIME_VALIDATION,
          "G = r14 - G2DISP satisfied G->cur_L->glref == G and main L->glref == G"));
    }
    for (Vm vm : vms.values()) {
      out.add(new DiscoveredOffset("G", vm.g, Provenance.RUNTIME_VALIDATION,
          "a global_State of this process"));
      if (vm.traceArray < 0) {
        out.add(new DiscoveredOffset("J->trace", 0, Provenance.RUNTIME_VALIDATION,
            "not validated yet: no JIT trace exists in this VM"));
      } else {
        out.add(new DiscoveredOffset("J->trace", vm.traceArray, Provenance.RUNTIME_VALIDATION,
            vm.traces.all().size() + " traces carried the GCtrace tag and their own number"));
      }
    }
    return out;
  }

  @Override
  public synchronized Map<String, Long> getAndResetCounters() {
    Map<String, Long> out = Map.copyOf(counters);
    counters.clear();
    return out;
  }

  @Override
  public synchronized void detach() {
    vms.clear();
    plan = CapturePlan.NONE;
    planG = 0;
  }

  private Vm vmWithTraceAt(long pc) {
    for (Vm vm : vms.values()) {
      if (vm.traces.at(pc) != null) {
        return vm;
      }
    }
    return null;
  }

  /**
   * G from the DISPATCH register (r14 in the interpreter and in GC64 traces): G = r14 -
   * GG_G2DISP. G2DISP is found once by searching the range every build falls in for the value
   * that makes G, G->cur_L and cur_L->glref agree; a cached G is the fallback.
   */
  private Vm findVm(TargetReader r, Registers regs) throws WalkException {
    long dispatch = regs.get(Register.R14);
    if (g2disp > 0 && isGlobalState(r, dispatch - g2disp)) {
      return vm(dispatch - g2disp);
    }
    if (g2disp < 0 && dispatch > G2DISP_MAX && dispatch < TargetReader.USER_MAX) {
      for (long d = G2DISP_MIN; d <= G2DISP_MAX; d += 8) {
        if (isGlobalState(r, dispatch - d)) {
          g2disp = d;
          return vm(dispatch - d);
        }
      }
    }
    for (Vm known : new ArrayList<>(vms.values())) {
      if (isGlobalState(r, known.g)) {
        count("g_from_cache");
        return known;
      }
    }
    throw new WalkException("no_global_state", "r14 = 0x" + Long.toHexString(dispatch));
  }

  private Vm vm(long g) {
    Vm vm = vms.get(g);
    if (vm == null) {
      if (vms.size() >= MAX_VMS) {
        vms.remove(vms.keySet().iterator().next());
      }
      vm = new Vm(g);
      vms.put(g, vm);
    }
    return vm;
  }

  private boolean isGlobalState(TargetReader r, long g) {
    try {
      long curL = r.u64(g + layout.curL(), "global_state");
      if (curL == 0 || r.u64(curL + Layout.L_GLREF, "lua_state") != g) {
        return false;
      }
      r.expectGcType(curL, Layout.GCT_THREAD, "lua_state");
      // The main thread sits right before G in GG_State: proves sizeof(lua_State) too.
      long mainL = g - layout.luaStateSize();
      return r.u64(mainL + Layout.L_GLREF, "lua_state") == g;
    } catch (WalkException e) {
      return false;
    }
  }

  /** SAVE_L of the interpreter frame, else cur_L; validated against G either way. */
  private long luaState(TargetReader r, long g, long cframe, boolean leaf) throws WalkException {
    long[] candidates = leaf
        ? new long[] {cframe + Layout.CF_SAVE_L, cframe + 8 + Layout.CF_SAVE_L}
        : new long[] {cframe + Layout.CF_SAVE_L};
    for (long slot : candidates) {
      long L = r.u64(slot, "cframe");
      // Above the leaf, SAVE_L is always stored: memory that cannot be read there is an error,
      // not a reason to fall back to cur_L (whose stack may be another segment's).
      if (isThreadOf(r, L, g, !leaf)) {
        return L;
      }
    }
    count("save_l_invalid");
    long L = r.u64(g + layout.curL(), "global_state");
    if (!isThreadOf(r, L, g, false)) {
      throw new WalkException("no_lua_state", "cur_L 0x" + Long.toHexString(L));
    }
    return L;
  }

  /** @param unreadableFails an unreadable candidate is an error rather than "not a thread" */
  private static boolean isThreadOf(TargetReader r, long L, long g, boolean unreadableFails)
      throws WalkException {
    try {
      return r.u64(L + Layout.L_GLREF, "lua_state") == g
          && r.u8(L + Layout.GC_GCT, "lua_state") == Layout.GCT_THREAD;
    } catch (WalkException e) {
      if (unreadableFails && e.reason().startsWith("unreadable_")) {
        throw e;
      }
      return false;
    }
  }

  /**
   * The innermost segment of L decides where the walk starts: jit_base on a trace (L->base is
   * stale there), BASE (rdx) in the interpreter, L->base when the VM called out to C.
   */
  private LuaStack walkInnermost(TargetReader r, Vm vm, long L, Registers regs, boolean leaf,
      Traces.Trace trace, long cframe, SampleState st) throws WalkException {
    int vmstate = r.u32(vm.g + layout.vmstate(), "global_state");
    if (st.leafVmstate == null) {
      st.leafVmstate = vmstate;
    }
    long stack = r.u64(L + Layout.L_STACK, "lua_state");
    long stackEnd = stack + 8L * (r.u32(L + Layout.L_STACKSIZE, "lua_state") & 0xffffff);
    long base = r.u64(L + Layout.L_BASE, "lua_state");
    long pc;
    boolean exact = false;
    long jitBase = r.u64(vm.g + layout.jitBase(), "global_state");
    if (trace != null || (leaf && vmstate >= 0) || (vmstate == -3 && jitBase != 0)) {
      if (jitBase != 0) {
        base = jitBase;
      }
      if (trace != null) {
        try {
          long baseProto;
          try {
            baseProto = frameProto(r, base);
          } catch (WalkException e) {
            baseProto = 0; // the IR's view of inlined code then has nothing to compare with
          }
          TraceSnapshots.Position at = vm.snapshots.locate(r, trace, regs.pc(), !leaf,
              baseProto, this::isCode);
          if (at.unresolved() != null) {
            count(at.unresolved());
            count(INLINE_UNKNOWN);
            st.inlineUnknown = at.unresolved();
          }
          return LuaStack.walk(r, L, start(r, base, at.basePc(), at.basePcExact()),
              at.basePc(), at.basePcExact()).under(at.inlined());
        } catch (WalkException e) {
          if (e.reason().equals(TraceSnapshots.CHANGED)) {
            refreshTraces(new TargetReader(process.memory(), layout), vm);
          }
          if (!e.reason().equals(TraceSnapshots.UNSUPPORTED)) {
            throw e;
          }
          count(e.reason()); // a build without snapshot mcode offsets: where the trace started
        }
      }
      Traces.Trace t = trace != null ? trace : vmstate >= 0 ? vm.traces.byNumber(vmstate) : null;
      pc = t != null && t.startProto() == frameProto(r, base) ? t.startPc() : 0;
      exact = true;
    } else if (interpreter.contains(regs.pc()) && vmstate == VM_INTERP) {
      // The PC is rbx (callee-saved) in the interpreter and in the C helpers it calls directly
      // without leaving the interpreted state (lj_tab_len for #t, ...). BASE is rdx at the
      // leaf, except inside the instructions of a call that move it (the slot below holds no
      // function yet; a returning frame's slot may hold a result, see
      // LuaStack.returningFrame); a direct C call saves it in rbp ("mov RB, BASE" in
      // vm_x64.dasc). L->base, synced only at some calls, is the fallback: trusting it for the
      // direct calls ended 5% of bench/lua/cpu.lua's samples in bad_function.
      long candidate = regs.get(leaf ? Register.RDX : Register.RBP);
      pc = regs.get(Register.RBX);
      if (Long.compareUnsigned(candidate, stack) > 0
          && Long.compareUnsigned(candidate, stackEnd) < 0 && (candidate & 7) == 0) {
        if (LuaStack.isFunction(r, candidate - 16)) {
          base = candidate;
        } else {
          long caller = LuaStack.returningFrame(r, candidate, pc);
          if (caller != 0) {
            return LuaStack.walk(r, L, caller, pc, false);
          }
        }
      }
    } else {
      pc = r.u64(cframe + Layout.CF_SAVE_PC, "cframe");
    }
    return LuaStack.walk(r, L, start(r, base, pc, exact), pc, exact);
  }

  /**
   * Where the walk starts: the caller's base when the top frame at {@code base} is already
   * returning (its PC points into the caller: the walk then starts at the call, where jit.p,
   * sampling at the next dispatch, charges such samples too, one instruction later).
   */
  private static long start(TargetReader r, long base, long pc, boolean exact) {
    long caller = exact ? 0 : LuaStack.returningFrame(r, base, pc);
    return caller != 0 ? caller : base;
  }

  /** The prototype of the Lua function whose frame starts at {@code base}, or 0 for a C one. */
  private static long frameProto(TargetReader r, long base) throws WalkException {
    long fn = r.u64(base - 16, "frame") & Layout.GCVMASK;
    r.expectGcType(fn, Layout.GCT_FUNC, "function");
    return r.u8(fn + Layout.FN_FFID, "function") != 0 ? 0
        : r.u64(fn + Layout.FN_PC, "function") - Layout.PROTO_SIZE;
  }

  private List<Frame> materialize(TargetReader r, LuaStack stack, int[] range, long cframe,
      String inlineUnknown) throws WalkException {
    List<LuaStack.Raw> all = stack.frames();
    List<Frame> out = new ArrayList<>();
    for (int i = range[0]; i < range[1]; i++) {
      LuaStack.Raw f = all.get(i);
      if (f.ffid() == 1) {
        continue; // a C function: the native frames already show it, by its symbol
      }
      long pc = f.pc();
      if (pc == 0 && i == range[0] && f.ffid() == 0 && !f.pcExact()) {
        pc = r.u64(cframe + Layout.CF_SAVE_PC, "cframe"); // called down into C, then back
      }
      Map<String, String> attributes = out.isEmpty() && inlineUnknown != null
          ? Map.of(INLINE_UNKNOWN_ATTRIBUTE, inlineUnknown) : Map.of();
      out.add(f.ffid() == 0
          ? luaFrame(r, all, i, pc, f.pcExact(), attributes)
          : new Frame(LuaJitPlugin.FRAME_TYPE, f.fn(), fastFunctions.name(f.ffid()), "", 0, 0,
              "", attributes));
    }
    return out;
  }

  private Frame luaFrame(TargetReader r, List<LuaStack.Raw> all, int i, long pc, boolean exact,
      Map<String, String> attributes) throws WalkException {
    LuaStack.Raw f = all.get(i);
    Protos.Proto proto = protos.get(r, f.protoAddress(r));
    int line = 0;
    if (pc != 0) {
      int pos = position(r, proto, pc, exact);
      PosKey key = new PosKey(proto, pos, -1);
      Integer cached = lines.get(key);
      if (cached != null) {
        line = cached;
      } else {
        line = Protos.line(r, proto, pos);
        lines.put(key, line);
      }
    }
    if (line <= 0) {
      // No position (entering or leaving through the VM's call and return paths, or a trace
      // frame whose PC its snapshot did not give): the function's own line, as LuaJIT does.
      line = Protos.entryLine(r, proto);
    }
    String name = inferName(r, all, i);
    if (name == null) {
      name = proto.firstLine() == 0 ? "main chunk"
          : "function <" + proto.chunk() + ":" + proto.firstLine() + ">";
    }
    // Garbage in a line table must not make a frame invalid: a line is never negative.
    return new Frame(LuaJitPlugin.FRAME_TYPE, proto.address(), name, proto.chunk(),
        Math.max(0, line), Math.max(0, proto.firstLine()), "", attributes);
  }

  /**
   * Bytecode position of a PC pointer (lj_debug's debug_framepc): a PC past the bytecode is a
   * return into a GCtrace after a JLOOP exit, recognised by the RET before it; anything else
   * gives -1 (line unknown), as LuaJIT itself punts there.
   */
  private int position(TargetReader r, Protos.Proto p, long pc, boolean exact)
      throws WalkException {
    long index = (pc - p.bytecode()) / 4 - (exact ? 0 : 1);
    if (index == -1) {
      return 1; // entering the function: LuaJIT pretends it is at the first instruction too
    }
    if (index >= 0 && index <= p.sizeBc()) {
      return (int) index;
    }
    try {
      int before = r.u32(pc - 4, "bytecode");
      int op = Bytecode.op(before);
      if (op < Bytecode.RETM || op > Bytecode.RET1) {
        count("pc_outside_bytecode");
        return -1;
      }
      long traceObject = pc - 4 - Layout.T_STARTINS;
      r.expectGcType(traceObject, Layout.GCT_TRACE, "trace");
      long start = r.u64(traceObject + Layout.T_STARTPC, "trace");
      long pos = (start - p.bytecode()) / 4;
      return pos >= 0 && pos <= p.sizeBc() ? (int) pos : -1;
    } catch (WalkException e) {
      count(e.reason());
      return -1;
    }
  }

  /**
   * The caller's view of frame i: its CALL instruction names the callee; when the caller is a
   * builtin that calls a function argument (pcall, xpcall, table.sort, string.gsub), the
   * builtin's own caller names that argument, which LuaJIT's profiler does not do.
   */
  private String inferName(TargetReader r, List<LuaStack.Raw> all, int i) throws WalkException {
    if (i + 1 >= all.size()) {
      return null;
    }
    LuaStack.Raw caller = all.get(i + 1);
    if (caller.ffid() == 0 && caller.pc() != 0 && !all.get(i).boundary()) {
      Protos.Proto p = protos.get(r, caller.protoAddress(r));
      return cachedName(r, p, position(r, p, caller.pc(), caller.pcExact()), -1);
    } else if (caller.ffid() > 1 && i + 2 < all.size()) {
      int slot = fastFunctions.calleeArgumentSlot(caller.ffid());
      LuaStack.Raw outer = all.get(i + 2);
      if (slot > 0 && outer.ffid() == 0 && outer.pc() != 0) {
        Protos.Proto p = protos.get(r, outer.protoAddress(r));
        return cachedName(r, p, position(r, p, outer.pc(), outer.pcExact()), slot);
      }
    }
    return null;
  }

  /** The callee name at a call site ({@code slot} -1) or of a call's argument slot; cached. */
  private String cachedName(TargetReader r, Protos.Proto p, int pos, int slot)
      throws WalkException {
    PosKey key = new PosKey(p, pos, slot);
    String name = names.get(key);
    if (name == null) {
      Names.Name n = slot < 0 ? Names.ofCallee(r, p, pos) : Names.ofArgument(r, p, pos, slot);
      name = n == null ? NO_NAME : n.name();
      names.put(key, name);
    }
    return name.isEmpty() ? null : name;
  }

  /**
   * The sample's attributes, {@code luajit.vmstate} and, in a trace, {@code luajit.trace}: one
   * immutable set per vmstate, as every sample carries one.
   */
  private SampleAttributes vmstateAttributes(int vmstate) {
    SampleAttributes a = attributesByVmstate.get(vmstate);
    if (a == null) {
      SampleAttributes.Builder b = SampleAttributes.builder();
      if (vmstate >= 0) {
        b.put("luajit.vmstate", "N").put("luajit.trace", vmstate);
      } else {
        b.put("luajit.vmstate", switch (vmstate) {
          case -1 -> "I";
          case -2 -> "C";
          case -3 -> "G";
          default -> "J";
        });
      }
      a = b.build();
      if (attributesByVmstate.size() >= MAX_CACHED_ATTRIBUTES) {
        attributesByVmstate.clear();
      }
      attributesByVmstate.put(vmstate, a);
    }
    return a;
  }

  private void refreshTraces(TargetReader r, Vm vm) {
    try {
      if (vm.traceArray < 0) {
        for (long candidate : Traces.candidates(g2disp)) {
          try {
            Traces found = Traces.read(r, vm.g, candidate);
            if (!found.all().isEmpty()) {
              // Only traces that check out prove the offset; an empty array proves nothing.
              vm.traces = found;
              vm.snapshots = new TraceSnapshots();
              vm.traceArray = candidate;
              return;
            }
          } catch (WalkException e) {
            count("trace_array_candidate_" + e.reason()); // try the next candidate
          }
        }
        return;
      }
      vm.traces = Traces.read(r, vm.g, vm.traceArray);
      vm.snapshots = new TraceSnapshots();
    } catch (WalkException e) {
      count(e.reason());
    }
  }

  /** Whether {@code address} lies in an executable mapping of the process (as last read). */
  private boolean isCode(long address) {
    for (dev.polystack.plugin.api.Mapping m : process.mappings()) {
      if (m.executable() && Long.compareUnsigned(address - m.start(), m.end() - m.start()) < 0) {
        return true;
      }
    }
    return false;
  }

  private void count(String reason) {
    counters.merge(reason, 1L, Long::sum);
  }
}
