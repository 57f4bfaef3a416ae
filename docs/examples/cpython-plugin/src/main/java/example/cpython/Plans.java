package example.cpython;

import dev.polystack.plugin.api.CapturePlan;

/**
 * The capture plan: at each tick, from the sampled thread's own thread pointer, its
 * {@code PyThreadState} (the gilstate key's {@code pthread_getspecific} slot, which every Python
 * thread has whether or not it holds the GIL), the current {@code _PyCFrame}, and the frames
 * under the current one in the thread's frame data stack, and last the GIL's state ({@code
 * last_holder}, {@code locked}) for the sample attribute {@code cpython.gil_held}. The walk then
 * reads them as they were at the tick.
 *
 * <p>The glibc x86-64 layout of {@code struct pthread} is written here, not discovered (plug-in
 * API 1.5 gives a plug-in no image of libc); {@link CPythonInstance} checks it against one live
 * thread before it hands this plan out, and the plan checks at every tick that the thread state
 * it found names the same thread pointer.
 */
final class Plans {
  /** {@code tcbhead_t.self}: the thread pointer points at itself. */
  static final int GLIBC_SELF = 0x10;
  /** {@code struct pthread.specific_1stblock}: keys 0-31, 16-byte {seq, data} entries. */
  static final int GLIBC_SPECIFIC_FIRST = 0x310;
  /** {@code struct pthread.specific}: pointers to the blocks of keys 32 and up. */
  static final int GLIBC_SPECIFIC = 0x510;
  static final int KEYS_PER_BLOCK = 32;
  static final int MAX_KEY = 1024;
  /** Frame bytes copied under the current frame's end: the first data stack chunk's size. */
  static final int FRAME_BYTES = 16 << 10;
  /** The label of the thread state's copy, which the walk looks for in the plan's outcome. */
  static final String THREAD_STATE = "py_thread_state";
  /** The label of the GIL state's copy ({@code last_holder}, {@code locked}). */
  static final String GIL = "py_gil";
  /**
   * {@code _PyRuntime.ceval.gil} in 3.11: the GIL's state inside the runtime (read from the
   * DWARF of pyenv's 3.11.7; Debian's 3.11.2 has none, and its samples are checked by the e2e
   * test instead).
   */
  static final int PY311_RUNTIME_GIL = 360;
  /** {@code PyInterpreterState.ceval.gil} in 3.12: a pointer to the interpreter's GIL. */
  static final int PY312_INTERP_GIL = 384;
  /** {@code struct _gil_runtime_state}: {@code last_holder} (a thread state), {@code locked}. */
  static final int GIL_LAST_HOLDER = 8;
  static final int GIL_LOCKED = 16;
  static final int GIL_BYTES = 24;

  private Plans() {}

  /** Where {@code pthread_getspecific(key)} keeps its value, for keys below 32. */
  static long firstBlockSlot(int key) {
    return GLIBC_SPECIFIC_FIRST + 16L * key + 8;
  }

  /** @param runtime the runtime address of {@code _PyRuntime} */
  static CapturePlan forKey(Layout layout, int key, long runtime) {
    CapturePlan.Builder b = CapturePlan.builder().threadPointer("tp").constant("zero", 0);
    if (key < KEYS_PER_BLOCK) {
      b.load("ts", "tp", firstBlockSlot(key), 8);
    } else {
      b.load("ts", "tp", GLIBC_SPECIFIC + 8L * (key / KEYS_PER_BLOCK), 8)
          .checkNotEquals("ts", "zero")
          .load("ts", "ts", 16L * (key % KEYS_PER_BLOCK) + 8, 8);
    }
    b.checkNotEquals("ts", "zero")
        .load("a", "ts", layout.tstateThreadId(), 8)
        .checkEquals("a", "tp") // this thread's own state, not a stale slot
        .copy("ts", 0, layout.tstateSize(), THREAD_STATE)
        .load("a", "ts", layout.tstateCframe(), 8)
        .copy("a", 0, 16, "py_cframe")
        .load("a", "a", layout.cframeCurrentFrame(), 8)
        .checkNotEquals("a", "zero")
        .add("end", "a", layout.frameSize())
        .add("start", "a", layout.frameSize() - FRAME_BYTES)
        .load("tp", "ts", layout.tstateDatastackChunk(), 8)
        .max("start", "start", "tp") // not below the current chunk
        .subtract("end", "end", "start")
        .copy("start", 0, "end", FRAME_BYTES, "py_frames");
    // Last, so that a GIL it cannot reach stops the plan after the frames are copied.
    if (layout.minor() == 11) {
      b.constant("a", runtime + PY311_RUNTIME_GIL);
    } else {
      b.load("a", "ts", layout.tstateInterp(), 8)
          .load("a", "a", PY312_INTERP_GIL, 8)
          .checkNotEquals("a", "zero");
    }
    return b.copy("a", 0, GIL_BYTES, GIL).build();
  }
}
