package example.cpython;

import dev.polystack.plugin.api.AttachException;
import dev.polystack.plugin.api.CodeRange;
import dev.polystack.plugin.api.DiscoveredOffset;
import dev.polystack.plugin.api.ProcessContext;
import dev.polystack.plugin.api.RuntimeBinary;
import dev.polystack.plugin.api.RuntimeInstance;
import java.util.List;

/** One CPython binary (executable or libpython): its version, layout and symbols. */
final class CPythonBinary implements RuntimeBinary {
  private final String runtime;
  private final Layout layout;
  private final List<String> evidence;
  private final DiscoveredOffset pyRuntime;
  private final DiscoveredOffset eval;
  private final long evalSize;
  private final DiscoveredOffset codeType;

  CPythonBinary(String runtime, Layout layout, List<String> evidence, DiscoveredOffset pyRuntime,
      DiscoveredOffset eval, long evalSize, DiscoveredOffset codeType) {
    this.runtime = runtime;
    this.layout = layout;
    this.evidence = List.copyOf(evidence);
    this.pyRuntime = pyRuntime;
    this.eval = eval;
    this.evalSize = evalSize;
    this.codeType = codeType;
  }

  @Override
  public String runtime() {
    return runtime;
  }

  @Override
  public List<String> evidence() {
    return evidence;
  }

  @Override
  public List<DiscoveredOffset> offsets() {
    return List.of(pyRuntime, eval, codeType);
  }

  @Override
  public List<CodeRange> codeRanges() {
    return List.of(new CodeRange(eval.value(), eval.value() + evalSize, eval.name()));
  }

  @Override
  public RuntimeInstance attach(ProcessContext process, long loadBias) throws AttachException {
    return new CPythonInstance(layout, process, pyRuntime.value() + loadBias,
        codeType.value() + loadBias);
  }
}
