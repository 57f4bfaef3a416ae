package example.toy;

import dev.polystack.plugin.api.Bytes;
import dev.polystack.plugin.api.CapturePlan;
import dev.polystack.plugin.api.Frame;
import dev.polystack.plugin.api.MemoryReadException;
import dev.polystack.plugin.api.RemoteMemory;
import dev.polystack.plugin.api.SampleAttributes;
import dev.polystack.plugin.api.RuntimeInstance;
import dev.polystack.plugin.api.SampleWalk;
import dev.polystack.plugin.api.SampleWalker;
import dev.polystack.plugin.api.ThreadContext;
import dev.polystack.plugin.api.WalkResult;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The plug-in attached to one process. Stateless between walks apart from counters, so
 * concurrent walks cannot disturb each other. Every value read is untrusted: the magic is
 * checked, the depth bounded, names read with a length bound; a bad value is a failed walk with
 * a reason (the host adds an error frame), never an exception.
 *
 * <p>What changes as the script runs is {@code toy_state} (its depth and frame table): the
 * capture plan copies it at the tick, so in bpf mode a walk sees the frames of that instant.
 * The names it points at are string literals, which never change: they are read through
 * {@link RemoteMemory#stable()} and need no copy.
 */
final class ToyInstance implements RuntimeInstance {
  static final byte[] MAGIC = "TOYVM01\0".getBytes(StandardCharsets.US_ASCII);
  static final int MAX_DEPTH = 16;
  static final int MAX_NAME = 128;
  static final int MAX_LINE = 1_000_000;

  private final long stateAddress;
  private final String script;
  private final CapturePlan plan;
  private final AtomicLong failures = new AtomicLong();

  ToyInstance(long stateAddress) {
    this.stateAddress = stateAddress;
    this.script = "toy-script";
    // toy_state lies at a fixed address (a global): copy all of it, the magic included, which
    // the walk checks before it trusts the copy.
    this.plan = CapturePlan.builder()
        .constant("state", stateAddress)
        .copy("state", 0, ToyBinary.STATE_SIZE, "toy_state")
        .build();
  }

  /** The same plan for the life of the process: the host compiles it once. */
  @Override
  public CapturePlan capturePlan() {
    return plan;
  }

  /**
   * One sample: the script's frames replace the leaf-most native frame of the interpreter loop,
   * and the call depth goes on the sample as {@code toy.depth}. One interpreter loop per thread:
   * a deeper frame of it would be re-entry, which the toy VM does not do, so the others stay
   * native rather than repeat the script frames.
   */
  @Override
  public SampleWalker openSample(ThreadContext thread) {
    return request -> {
      SampleAttributes.Builder attributes = SampleAttributes.builder();
      WalkResult frames = walk(thread.memory(), attributes);
      return new SampleWalk(Map.of(request.frames().get(0).nativeIndex(), frames),
          attributes.build());
    };
  }

  private WalkResult walk(RemoteMemory memory, SampleAttributes.Builder attributes) {
    RemoteMemory literals = memory.stable();
    List<Frame> frames = new ArrayList<>();
    try {
      byte[] head = memory.readFully(stateAddress, 16);
      if (!Arrays.equals(Arrays.copyOf(head, 8), MAGIC)) {
        return failed("bad_magic", frames);
      }
      int depth = Bytes.getInt(head, 8);
      if (depth < 0 || depth > MAX_DEPTH) {
        return failed("bad_depth", frames);
      }
      byte[] table = depth == 0 ? new byte[0] : memory.readFully(stateAddress + 16, depth * 16);
      // Leaf first: the innermost script function is the last entry.
      for (int i = depth - 1; i >= 0; i--) {
        long name = Bytes.getLong(table, i * 16);
        int line = Bytes.getInt(table, i * 16 + 8);
        if (name == 0 || line < 0 || line > MAX_LINE) {
          return failed("bad_frame", frames);
        }
        String function = literals.readCString(name, MAX_NAME);
        frames.add(new Frame("toy", 0, function, script, line, 0, "", Map.of()));
      }
      attributes.put(ToyPlugin.ID + ".depth", depth);
      return new WalkResult.Frames(frames);
    } catch (MemoryReadException e) {
      return failed("unreadable", frames);
    }
  }

  private WalkResult failed(String reason, List<Frame> partial) {
    failures.incrementAndGet();
    return new WalkResult.Failed(reason, partial);
  }

  @Override
  public Map<String, Long> getAndResetCounters() {
    long n = failures.getAndSet(0);
    return n == 0 ? Map.of() : Map.of("failed_walks", n);
  }
}
