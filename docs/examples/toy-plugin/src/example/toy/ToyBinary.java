package example.toy;

import dev.polystack.plugin.api.CodeRange;
import dev.polystack.plugin.api.DiscoveredOffset;
import dev.polystack.plugin.api.ProcessContext;
import dev.polystack.plugin.api.RuntimeBinary;
import dev.polystack.plugin.api.RuntimeInstance;
import java.util.List;

/** What the plug-in learned about one toy_interp binary; immutable, shared by processes. */
final class ToyBinary implements RuntimeBinary {
  /** sizeof(struct toy_state): magic[8], depth, pad, 16 frames of {name, line, pad}. */
  static final int STATE_SIZE = 8 + 4 + 4 + 16 * 16;

  private final List<String> evidence;
  private final DiscoveredOffset loop;
  private final long loopSize;
  private final DiscoveredOffset state;

  ToyBinary(List<String> evidence, DiscoveredOffset loop, long loopSize, DiscoveredOffset state) {
    this.evidence = List.copyOf(evidence);
    this.loop = loop;
    this.loopSize = loopSize;
    this.state = state;
  }

  @Override
  public String runtime() {
    return "toy interpreter 1";
  }

  @Override
  public List<String> evidence() {
    return evidence;
  }

  @Override
  public List<DiscoveredOffset> offsets() {
    return List.of(loop, state);
  }

  /** Native frames in the interpreter loop are the ones to replace with script frames. */
  @Override
  public List<CodeRange> codeRanges() {
    return List.of(new CodeRange(loop.value(), loop.value() + loopSize, "toy interpreter loop"));
  }

  @Override
  public RuntimeInstance attach(ProcessContext process, long loadBias) {
    return new ToyInstance(state.value() + loadBias);
  }
}
