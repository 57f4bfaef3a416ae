package dev.polystack.host.bpf;

import dev.polystack.host.sys.Errno;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.function.Consumer;
import com.kenai.jffi.MemoryIO;
import jnr.ffi.Pointer;

/**
 * Reads a BPF ring buffer through libbpf's ring_buffer (chosen over mmapping the map here: it
 * already does the epoll wait and the acquire/release consumer protocol, and one upcall per
 * record is cheap at tick rates).
 */
final class RingReader implements AutoCloseable {
  private static final MemoryIO MEMORY = MemoryIO.getInstance();
  private final LibBpf lib;
  private final Pointer ring;
  /** Held by this object for as long as the native ring may call it. */
  private final LibBpf.SampleCallback callback = this::sample;
  private Consumer<ByteBuffer> sink;
  private int delivered;
  private Throwable thrown;
  private boolean freed;

  private RingReader(LibBpf lib, int mapFd) throws BpfLoadException {
    this.lib = lib;
    Pointer r = lib.ring_buffer__new(mapFd, callback, null, null);
    if (r == null) {
      throw BpfLoadException.of("opening the BPF ring buffer", Bpf.errno(), BpfLog.reason(),
          "raise the open file limit (ulimit -n) or free memory");
    }
    this.ring = r;
  }

  static RingReader open(int mapFd) throws BpfLoadException {
    return new RingReader(Bpf.lib(), mapFd);
  }

  /**
   * Hands the records in the ring to {@code sink}; when there are none, waits up to {@code
   * timeoutMillis} first. The program does not wake readers per record (see
   * tick_capture.bpf.c), only once the ring is a quarter full, so a wait usually lasts its whole
   * timeout and then returns what came meanwhile. An exception from the sink is rethrown here,
   * after the native call returned; that record is consumed.
   */
  synchronized int poll(int timeoutMillis, Consumer<ByteBuffer> sink) {
    if (freed) {
      throw new IllegalStateException("tick capture is closed");
    }
    this.sink = sink;
    delivered = 0;
    thrown = null;
    try {
      check(lib.ring_buffer__consume(ring), "ring_buffer__consume");
      if (delivered == 0 && timeoutMillis != 0) {
        check(lib.ring_buffer__poll(ring, timeoutMillis), "ring_buffer__poll");
        check(lib.ring_buffer__consume(ring), "ring_buffer__consume");
      }
    } finally {
      this.sink = null;
    }
    return delivered;
  }

  private void check(int rc, String call) {
    // The sink's exception first: libbpf turns the callback's -1 into its own error code.
    if (thrown != null) {
      Throwable t = thrown;
      thrown = null;
      if (t instanceof RuntimeException re) {
        throw re;
      }
      if (t instanceof Error e) {
        throw e;
      }
      throw new IllegalStateException("record sink failed", t);
    }
    if (rc < 0 && -rc != Errno.EINTR) {
      throw new BpfException(call, rc);
    }
  }

  // Called from native code: never throws (a Java exception cannot unwind through libbpf).
  private int sample(Pointer context, Pointer data, long size) {
    try {
      // A view of the record where it lies in the ring, not a copy: the sink may use it only
      // during the call, as libbpf reuses the space once the callback returns.
      ByteBuffer view = MEMORY.newDirectByteBuffer(data.address(), (int) size);
      // asReadOnlyBuffer() resets the order to big-endian, so the order is set last.
      sink.accept(view.asReadOnlyBuffer().order(ByteOrder.LITTLE_ENDIAN));
      delivered++;
      return 0;
    } catch (Throwable t) {
      thrown = t;
      return -1;
    }
  }

  /** Frees the ring; callers close the perf events first so nothing writes to it. */
  @Override
  public synchronized void close() {
    if (!freed) {
      freed = true;
      lib.ring_buffer__free(ring);
    }
  }
}
