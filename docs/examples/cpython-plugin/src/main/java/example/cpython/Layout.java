package example.cpython;

/**
 * Where CPython keeps what a walk reads, per minor version. The values are the struct offsets of
 * the x86-64 builds of 3.11 and 3.12 (README.md, "Offsets", says how they were checked); the
 * walk validates what it reads with them (a code object's type, a thread state's thread id), so
 * a build that differs fails counted instead of naming the wrong frames.
 *
 * @param minor the Python minor version (11 or 12)
 * @param runtimeTssKey {@code _PyRuntime.gilstate.autoTSSkey._key} (int)
 * @param runtimeTssInitialized {@code _PyRuntime.gilstate.autoTSSkey._is_initialized} (int)
 * @param runtimeInterpreters {@code _PyRuntime.interpreters.head}
 * @param interpThreads {@code PyInterpreterState.threads.head}
 * @param tstateNext {@code PyThreadState.next}
 * @param tstateInterp {@code PyThreadState.interp}
 * @param tstateCframe {@code PyThreadState.cframe}
 * @param tstateThreadId {@code PyThreadState.thread_id} (the thread's pthread_t: its thread
 *     pointer under glibc)
 * @param tstateNativeThreadId {@code PyThreadState.native_thread_id} (the kernel tid)
 * @param tstateDatastackChunk {@code PyThreadState.datastack_chunk}
 * @param tstateSize bytes of the thread state the capture plan copies
 * @param cframeCurrentFrame {@code _PyCFrame.current_frame}
 * @param frameCode {@code _PyInterpreterFrame.f_code}
 * @param framePrevious {@code _PyInterpreterFrame.previous}
 * @param framePrevInstr {@code _PyInterpreterFrame.prev_instr}
 * @param frameIsEntry 3.11's {@code is_entry} (bool), or -1
 * @param frameOwner {@code _PyInterpreterFrame.owner} (char); 3.12's C-stack entry frame has 3
 * @param frameSize {@code sizeof(_PyInterpreterFrame)}
 * @param codeFirstLine {@code PyCodeObject.co_firstlineno} (int)
 * @param codeStacksize {@code PyCodeObject.co_stacksize} (int)
 * @param codeNlocalsplus {@code PyCodeObject.co_nlocalsplus} (int)
 * @param codeFilename {@code PyCodeObject.co_filename}
 * @param codeQualname {@code PyCodeObject.co_qualname}
 * @param codeLinetable {@code PyCodeObject.co_linetable} (a bytes object)
 * @param codeAdaptive {@code PyCodeObject.co_code_adaptive}, where the code units start
 * @param asciiSize {@code sizeof(PyASCIIObject)}: compact ASCII data follows
 * @param compactSize {@code sizeof(PyCompactUnicodeObject)}: other compact data follows
 */
record Layout(
    int minor,
    int runtimeTssKey,
    int runtimeTssInitialized,
    int runtimeInterpreters,
    int interpThreads,
    int tstateNext,
    int tstateInterp,
    int tstateCframe,
    int tstateThreadId,
    int tstateNativeThreadId,
    int tstateDatastackChunk,
    int tstateSize,
    int cframeCurrentFrame,
    int frameCode,
    int framePrevious,
    int framePrevInstr,
    int frameIsEntry,
    int frameOwner,
    int frameSize,
    int codeFirstLine,
    int codeStacksize,
    int codeNlocalsplus,
    int codeFilename,
    int codeQualname,
    int codeLinetable,
    int codeAdaptive,
    int asciiSize,
    int compactSize) {

  /** {@code FRAME_OWNED_BY_THREAD}: a frame on the thread's data stack. */
  static final int OWNED_BY_THREAD = 0;
  /** {@code FRAME_OWNED_BY_CSTACK}: 3.12's entry frame on the C stack, not Python code. */
  static final int OWNED_BY_CSTACK = 3;
  /** {@code PyObject.ob_type}. */
  static final int OB_TYPE = 8;
  /** {@code PyVarObject.ob_size}, the length of a bytes or str object. */
  static final int OB_SIZE = 16;
  /** {@code PyBytesObject.ob_sval}. */
  static final int BYTES_DATA = 32;
  /** {@code PyASCIIObject.state}: kind, compact and ascii bits. */
  static final int STR_STATE = 32;

  static final Layout PY311 = new Layout(11, 596, 592, 40, 16, 8, 16, 56, 152, 160, 296, 312,
      8, 32, 48, 56, 68, 69, 80, 72, 68, 76, 112, 128, 136, 184, 48, 72);
  static final Layout PY312 = new Layout(12, 1548, 1544, 40, 72, 8, 16, 56, 136, 144, 232, 248,
      0, 0, 8, 56, -1, 70, 80, 68, 64, 72, 112, 128, 136, 192, 40, 56);

  /**
   * {@code FRAME_SPECIALS_SIZE}: the words of a frame before its locals, {@code
   * (sizeof(_PyInterpreterFrame) - 1) / 8}; a frame takes this plus {@code co_nlocalsplus} plus
   * {@code co_stacksize} words of the data stack (3.12's {@code co_framesize}).
   */
  int frameSpecialWords() {
    return (frameSize - 1) / 8;
  }

  /** The layout of Python 3.{@code minor}, or null when this plug-in has none. */
  static Layout forMinor(int minor) {
    return switch (minor) {
      case 11 -> PY311;
      case 12 -> PY312;
      default -> null;
    };
  }
}
