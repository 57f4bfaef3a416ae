package example.cpython;

import dev.polystack.plugin.api.Bytes;
import dev.polystack.plugin.api.CapturePlan;
import dev.polystack.plugin.api.CapturedRegion;
import dev.polystack.plugin.api.DiscoveredOffset;
import dev.polystack.plugin.api.Frame;
import dev.polystack.plugin.api.MemoryReadException;
import dev.polystack.plugin.api.PlanOutcome;
import dev.polystack.plugin.api.ProcessContext;
import dev.polystack.plugin.api.Provenance;
import dev.polystack.plugin.api.RemoteMemory;
import dev.polystack.plugin.api.RuntimeInstance;
import dev.polystack.plugin.api.SampleAttributes;
import dev.polystack.plugin.api.SampleType;
import dev.polystack.plugin.api.SampleRequest;
import dev.polystack.plugin.api.SampleWalk;
import dev.polystack.plugin.api.SampleWalker;
import dev.polystack.plugin.api.ThreadContext;
import dev.polystack.plugin.api.WalkResult;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;

/**
 * CPython attached to one process. A sample's Python frames are read once per sample (its
 * {@link SampleWalker} gets every {@code _PyEval_EvalFrameDefault} native frame of the unwind),
 * from the sampled thread's own {@code PyThreadState} (found by kernel tid in the interpreter's
 * thread list, never by who holds the GIL), and split one run per such native frame: each C
 * call of the evaluation loop
 * runs the Python frames up to the next entry frame (3.11: {@code is_entry}; 3.12: the entry
 * frame the loop keeps on the C stack).
 */
final class CPythonInstance implements RuntimeInstance {
  static final String FRAME_TYPE = "cpython";
  static final int MAX_FRAMES = 1024;
  static final int MAX_THREADS = 4096;
  static final int MAX_INTERPRETERS = 64;
  /** Code units beyond this from a code object's start are not its own. */
  static final long MAX_CODE_BYTES = 16 << 20;
  /** Farther apart than this, two frames lie in different data stack chunks. */
  static final long MAX_CHUNK_BYTES = 16 << 20;
  /** Live threads checked against the glibc thread layout before the plan is given up. */
  static final int MAX_LAYOUT_CHECKS = 16;

  private final Layout layout;
  private final ProcessContext process;
  private final long runtime;
  private final CodeObjects codes;
  /** Kernel tid to its PyThreadState, from the last scan of the thread lists. */
  private final Map<Integer, Long> threadStates = new HashMap<>();
  private final Map<String, Long> counters = new TreeMap<>();
  private CapturePlan plan = CapturePlan.NONE;
  private int tssKey = -1;
  private int layoutChecks;

  /** One sample's Python frames, split at entry frames, leaf-most run first. */
  private static final class Sample {
    List<List<Frame>> runs;
    String error;
    /** Whether the thread held the GIL at the tick; null when the plan copied no GIL state. */
    Boolean gilHeld;
  }

  /** The sample attribute saying whether the sampled thread held the GIL at the tick. */
  static final String GIL_HELD = "cpython.gil_held";
  /** The sample type counting samples whose thread held the GIL at the tick. */
  static final SampleType GIL_SAMPLES = new SampleType("cpython.gil_samples", "count");

  CPythonInstance(Layout layout, ProcessContext process, long runtime, long codeType) {
    this.layout = layout;
    this.process = process;
    this.runtime = runtime;
    this.codes = new CodeObjects(layout, codeType);
  }

  /**
   * A walker for one sample: the host calls it holding this instance's monitor (API 1.10), so
   * it never runs beside the synchronized methods below and needs no lock of its own. The
   * interpreter's frames unwind by CFI, so only its walk is the plug-in's.
   */
  @Override
  public SampleWalker openSample(ThreadContext thread) {
    return this::walk;
  }

  /**
   * The sample's Python frames, read once, run k replacing the k-th evaluation-loop frame from
   * the leaf.
   */
  private SampleWalk walk(SampleRequest request) {
    Sample s = new Sample();
    read(request.thread(), s);
    Map<Integer, WalkResult> out = new HashMap<>();
    List<SampleRequest.OwnedFrame> loops = request.frames();
    for (int k = 0; k < loops.size(); k++) {
      if (k >= s.runs.size()) {
        if (s.error == null) { // after an error, the callers' loop frames stay native
          count("eval_frame_without_run", loops.size() - k);
        }
        break;
      }
      List<Frame> frames = s.runs.get(k);
      int index = loops.get(k).nativeIndex();
      if (k == s.runs.size() - 1 && s.error != null) {
        count(s.error, 1);
        out.put(index, new WalkResult.Failed(s.error, frames));
      } else {
        out.put(index, new WalkResult.Frames(frames));
      }
    }
    if (s.runs.size() > loops.size()) {
      // The native unwind ended above these runs' evaluation-loop frames.
      count("runs_without_eval_frame", s.runs.size() - loops.size());
    }
    return s.gilHeld == null ? new SampleWalk(out)
        : new SampleWalk(out, SampleAttributes.builder().put(GIL_HELD, s.gilHeld).build(),
            Map.of(GIL_SAMPLES.name(), s.gilHeld ? 1L : 0L));
  }

  /**
   * The plan once the thread layout it assumes held for a live thread: checked here as soon as
   * the runtime has a thread (the host asks again while the answer is none), and by walks.
   */
  @Override
  public synchronized CapturePlan capturePlan() {
    if (plan.isEmpty() && layoutChecks < MAX_LAYOUT_CHECKS) {
      try {
        scanThreads();
        threadStates.values().stream().findFirst().ifPresent(this::checkThreadLayout);
      } catch (WalkException e) {
        // not started yet, or a list that failed a check: the walks count what they find
      }
    }
    return plan;
  }

  @Override
  public synchronized List<DiscoveredOffset> validatedOffsets() {
    if (plan.isEmpty()) {
      return List.of();
    }
    return List.of(new DiscoveredOffset("autoTSSkey", tssKey, Provenance.RUNTIME_VALIDATION,
        "gilstate key; pthread_getspecific slot matched a live thread's PyThreadState"));
  }

  @Override
  public synchronized Map<String, Long> getAndResetCounters() {
    long freed = codes.getAndResetFreedSinceTick();
    if (freed > 0) {
      count("code_freed_since_tick", freed);
    }
    Map<String, Long> out = Map.copyOf(counters);
    counters.clear();
    return out;
  }

  @Override
  public synchronized void detach() {
    threadStates.clear();
  }

  private void read(ThreadContext thread, Sample s) {
    List<List<Frame>> runs = new ArrayList<>();
    List<Frame> current = new ArrayList<>();
    RemoteMemory memory = thread.memory();
    try {
      long ts = threadState(thread);
      if (plan.isEmpty()) {
        checkThreadLayout(ts);
      }
      s.gilHeld = gilHeld(thread, ts);
      long cframe = memory.readLong(ts + layout.tstateCframe());
      if (!Pointers.plausible(cframe)) {
        throw new WalkException("bad_cframe");
      }
      long frame = memory.readLong(cframe + layout.cframeCurrentFrame());
      byte[] f = new byte[layout.frameSize()];
      long callee = 0;
      int calleeOwner = -1;
      for (int n = 0; frame != 0; n++) {
        if (n >= MAX_FRAMES) {
          throw new WalkException("too_many_frames");
        }
        if (!Pointers.plausible(frame)) {
          throw new WalkException("bad_frame_pointer");
        }
        if (memory.read(frame, f, 0, f.length) < f.length) {
          throw new WalkException("unreadable_frame");
        }
        if (layout.frameIsEntry() < 0 && f[layout.frameOwner()] == Layout.OWNED_BY_CSTACK) {
          runs.add(current); // 3.12: the C call's own entry frame ends its run
          current = new ArrayList<>();
        } else {
          Frame named = frame(memory.stable(), f);
          checkLink(memory, f, frame, callee, calleeOwner);
          current.add(named);
          if (layout.frameIsEntry() >= 0 && f[layout.frameIsEntry()] != 0) {
            runs.add(current); // 3.11: the first frame a C call ran ends its run
            current = new ArrayList<>();
          }
        }
        callee = frame;
        calleeOwner = f[layout.frameOwner()];
        frame = Bytes.getLong(f, layout.framePrevious());
      }
    } catch (WalkException e) {
      s.error = e.reason();
    } catch (MemoryReadException e) {
      s.error = "unreadable_frame";
    }
    if (!current.isEmpty() || s.error != null || runs.isEmpty()) {
      runs.add(current);
    }
    s.runs = runs;
  }

  /**
   * A frame on the data stack is pushed where its caller's frame ends, so a thread-owned callee
   * starts {@code frameWords} words of the caller's code above the caller. A callee whose link
   * breaks that was caught between being made current and being linked: its {@code previous}
   * names a dead slot, which may still hold an earlier, self-consistent frame (README.md,
   * "Limits"). Frames in different chunks, and frames not on the data stack, are not checked.
   */
  private void checkLink(RemoteMemory memory, byte[] f, long frame, long callee, int calleeOwner)
      throws WalkException {
    if (callee == 0 || calleeOwner != Layout.OWNED_BY_THREAD
        || f[layout.frameOwner()] != Layout.OWNED_BY_THREAD) {
      return;
    }
    long gap = callee - frame;
    if (gap <= 0 || gap > MAX_CHUNK_BYTES) {
      return; // the callee opened another chunk
    }
    int words = codes.code(memory.stable(), Bytes.getLong(f, layout.frameCode())).frameWords();
    if (words > 0 && gap != 8L * words) {
      throw new WalkException("torn_frame_link");
    }
    count("frame_links_checked", 1);
  }

  private Frame frame(RemoteMemory stable, byte[] f) throws WalkException {
    long address = Bytes.getLong(f, layout.frameCode());
    CodeObjects.Code code = codes.code(stable, address);
    long offset = Bytes.getLong(f, layout.framePrevInstr()) - (address + layout.codeAdaptive());
    int line;
    if (offset < -2 || offset >= MAX_CODE_BYTES) {
      line = 0; // not into this code object's units: no line rather than a wrong one
    } else {
      line = LineTable.lineAt(code.lineTable(), code.firstLine(), (int) (offset >> 1));
    }
    return new Frame(FRAME_TYPE, 0, code.qualname(), code.filename(), line,
        Math.max(0, code.firstLine()), "", Map.of());
  }

  /**
   * Whether thread state {@code ts} held the GIL at the tick: the GIL is locked and {@code ts}
   * took it last, in the plan's copy of the GIL state; null without that copy (no plan, or it
   * stopped before) or when the copy holds no plausible state.
   */
  private Boolean gilHeld(ThreadContext thread, long ts) {
    if (plan.isEmpty()) {
      return null;
    }
    Optional<PlanOutcome> outcome = thread.planOutcome(plan);
    if (outcome.isEmpty()) {
      return null;
    }
    for (CapturedRegion r : outcome.get().regions()) {
      if (r.label().equals(Plans.GIL) && r.length() >= Plans.GIL_BYTES) {
        try {
          long holder = thread.memory().readLong(r.address() + Plans.GIL_LAST_HOLDER);
          int locked = thread.memory().readInt(r.address() + Plans.GIL_LOCKED);
          if ((locked != 0 && locked != 1) || (holder != 0 && !Pointers.plausible(holder))) {
            count("gil_state_implausible", 1);
            return null;
          }
          return locked == 1 && holder == ts;
        } catch (MemoryReadException e) {
          count("gil_state_unreadable", 1);
          return null;
        }
      }
    }
    return null;
  }

  /**
   * The thread's PyThreadState: where this sample's plan found it at the tick, from the thread's
   * own thread pointer (its copy exists only if the state named that thread); else the one
   * remembered for its tid while that state still names the tid (read through the sample's
   * memory, so from the tick's copy when the plan made one); else a fresh scan of every
   * interpreter's thread list, its answer checked the same way.
   */
  private long threadState(ThreadContext thread) throws WalkException {
    if (!plan.isEmpty()) {
      Optional<PlanOutcome> outcome = thread.planOutcome(plan);
      if (outcome.isPresent()) {
        for (CapturedRegion r : outcome.get().regions()) {
          if (r.label().equals(Plans.THREAD_STATE)) {
            count("thread_state_from_tick", 1);
            return r.address();
          }
        }
      }
    }
    RemoteMemory memory = thread.memory();
    int tid = thread.tid();
    Long known = threadStates.get(tid);
    if (known != null && nativeTid(memory, known) == tid) {
      return known;
    }
    count("thread_scans", 1);
    scanThreads();
    known = threadStates.get(tid);
    // Checked as a remembered state is: a walk then reads the same word whether the map knew
    // the tid or not, so a snapshot of the first walk replays the next.
    if (known == null || nativeTid(memory, known) != tid) {
      throw new WalkException("no_thread_state");
    }
    return known;
  }

  private long nativeTid(RemoteMemory memory, long ts) {
    try {
      return memory.readLong(ts + layout.tstateNativeThreadId());
    } catch (MemoryReadException e) {
      return -1;
    }
  }

  /**
   * Reads every interpreter's thread list from the process. The last good answer is kept when
   * this one fails: records are walked after the tick, the last ones after the process exited,
   * and a remembered state is checked against the sample's own copy before it is used.
   */
  private void scanThreads() throws WalkException {
    Map<Integer, Long> found = new HashMap<>();
    RemoteMemory live = process.memory();
    try {
      long interp = live.readLong(runtime + layout.runtimeInterpreters());
      for (int i = 0; interp != 0; i++) {
        if (i >= MAX_INTERPRETERS || !Pointers.plausible(interp)) {
          throw new WalkException("bad_interpreter_list");
        }
        long ts = live.readLong(interp + layout.interpThreads());
        for (int j = 0; ts != 0; j++) {
          if (j >= MAX_THREADS || !Pointers.plausible(ts)
              || live.readLong(ts + layout.tstateInterp()) != interp) {
            throw new WalkException("bad_thread_list");
          }
          long tid = live.readLong(ts + layout.tstateNativeThreadId());
          if (tid > 0 && tid <= Integer.MAX_VALUE) {
            found.put((int) tid, ts);
          }
          ts = live.readLong(ts + layout.tstateNext());
        }
        interp = live.readLong(interp); // PyInterpreterState.next
      }
      if (found.size() > MAX_THREADS) {
        throw new WalkException("bad_thread_list");
      }
      threadStates.clear();
      threadStates.putAll(found);
    } catch (MemoryReadException e) {
      throw new WalkException("unreadable_thread_list");
    }
  }

  /**
   * Checks the glibc thread layout {@link Plans} assumes against one live thread: its thread
   * pointer (CPython's thread_id is the pthread_t) points at itself, and the gilstate key's slot
   * holds this thread state. Only then is there a plan.
   */
  private void checkThreadLayout(long ts) {
    if (layoutChecks >= MAX_LAYOUT_CHECKS) {
      return;
    }
    RemoteMemory live = process.memory();
    try {
      if (live.readInt(runtime + layout.runtimeTssInitialized()) != 1) {
        return; // the runtime is still starting
      }
      int key = live.readInt(runtime + layout.runtimeTssKey());
      layoutChecks++;
      long tp = live.readLong(ts + layout.tstateThreadId());
      if (key < 0 || key >= Plans.MAX_KEY || !Pointers.plausible(tp)
          || live.readLong(tp + Plans.GLIBC_SELF) != tp) {
        count("thread_layout_mismatch", 1);
        return;
      }
      long slot = key < Plans.KEYS_PER_BLOCK ? tp + Plans.firstBlockSlot(key)
          : live.readLong(tp + Plans.GLIBC_SPECIFIC + 8L * (key / Plans.KEYS_PER_BLOCK))
              + 16L * (key % Plans.KEYS_PER_BLOCK) + 8;
      if (live.readLong(slot) != ts) {
        count("thread_layout_mismatch", 1);
        return;
      }
      tssKey = key;
      plan = Plans.forKey(layout, key, runtime);
    } catch (MemoryReadException e) {
      count("thread_layout_unreadable", 1);
    }
  }

  private void count(String reason, long n) {
    counters.merge(reason, n, Long::sum);
  }
}
