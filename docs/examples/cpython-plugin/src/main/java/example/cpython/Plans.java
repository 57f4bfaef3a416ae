package example.cpython;

import dev.polystack.plugin.api.CapturePlan;

/**
 * The capture plan: at each tick, from the sampled thread's own thread pointer, its
 * {@code PyThreadState} (the gilstate key's {@code pthread_getspecific} slot, which every Python
 * thread has whether or not it holds the GIL), the current {@code _PyCFrame}, and the frames
 * under the current one in the thread's frame data stack. The walk then reads them as they were
 * at the tick.
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

  private Plans() {}

  /** Where {@code pthread_getspecific(key)} keeps its value, for keys below 32. */
  static long firstBlockSlot(int key) {
    return GLIBC_SPECIFIC_FIRST + 16L * key + 8;
  }

  static CapturePlan forKey(Layout layout, int key) {
    CapturePlan.Builder b = CapturePlan.builder().threadPointer("tp").constant("zero", 0);
    if (key < KEYS_PER_BLOCK) {
      b.load("ts", "tp", firstBlockSlot(key), 8);
    } else {
      b.load("ts", "tp", GLIBC_SPECIFIC + 8L * (key / KEYS_PER_BLOCK), 8)
          .checkNotEquals("ts", "zero")
          .load("ts", "ts", 16L * (key % KEYS_PER_BLOCK) + 8, 8);
    }
    return b.checkNotEquals("ts", "zero")
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
        .copy("start", 0, "end", FRAME_BYTES, "py_frames")
        .build();
  }
}
