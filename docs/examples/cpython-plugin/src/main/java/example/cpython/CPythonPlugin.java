package example.cpython;

import dev.polystack.plugin.api.ApiVersion;
import dev.polystack.plugin.api.Bytes;
import dev.polystack.plugin.api.Capability;
import dev.polystack.plugin.api.DiscoveredOffset;
import dev.polystack.plugin.api.ImageReadException;
import dev.polystack.plugin.api.Inspection;
import dev.polystack.plugin.api.ModuleImage;
import dev.polystack.plugin.api.ModuleSymbol;
import dev.polystack.plugin.api.PluginDescriptor;
import dev.polystack.plugin.api.Provenance;
import dev.polystack.plugin.api.RuntimePlugin;
import dev.polystack.plugin.api.SampleType;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * Python frames of CPython 3.11 and 3.12, built out of tree against plugin-api alone
 * (README.md). Recognises the interpreter by its exported {@code _PyRuntime} and
 * {@code Py_Version}, in the executable (Debian's statically linked python3.11) or in
 * libpython (builds with {@code --enable-shared}, such as pyenv's), never by file name.
 */
public final class CPythonPlugin implements RuntimePlugin {
  static final String RUNTIME = "_PyRuntime";
  static final String VERSION = "Py_Version";
  static final String EVAL = "_PyEval_EvalFrameDefault";
  static final String CODE_TYPE = "PyCode_Type";

  @Override
  public PluginDescriptor descriptor() {
    // The oldest API it needs: sample types came with 2.0.
    return new PluginDescriptor("cpython", "0.1.0", new ApiVersion(2, 0), "cpython",
        Set.of(Capability.DETECT, Capability.DISCOVER_OFFSETS, Capability.WALK_FRAMES,
            Capability.SYMBOLIZE, Capability.CAPTURE_AT_TICK),
        "example: Python frames of CPython 3.11 and 3.12 (docs/examples/cpython-plugin)");
  }

  /**
   * {@code cpython.gil_samples}: 1 for a sample whose thread held the GIL at the tick, else 0,
   * so {@code go tool pprof -sample_index=cpython.gil_samples} shows where the GIL is held, as
   * {@code py-spy --gil} does.
   */
  @Override
  public List<SampleType> sampleTypes() {
    return List.of(CPythonInstance.GIL_SAMPLES);
  }

  @Override
  public Inspection inspect(ModuleImage image) {
    try {
      Optional<ModuleSymbol> runtime = image.symbol(RUNTIME);
      Optional<ModuleSymbol> version = image.symbol(VERSION);
      if (runtime.isEmpty() || version.isEmpty() || runtime.get().function()) {
        return Inspection.notMine();
      }
      byte[] word = new byte[4];
      if (image.read(version.get().value(), word, 0, 4) != 4) {
        return new Inspection.Unsupported(VERSION + " in " + image.name()
            + " is not readable from the file", List.of("exports " + RUNTIME + ", " + VERSION));
      }
      int hex = Bytes.getInt(word, 0);
      int major = hex >>> 24;
      int minor = (hex >>> 16) & 0xff;
      int micro = (hex >>> 8) & 0xff;
      String name = "CPython " + major + "." + minor + "." + micro;
      List<String> evidence = List.of("exports " + RUNTIME + " and " + VERSION,
          VERSION + " = 0x" + Integer.toHexString(hex) + " (" + name + ")");
      Layout layout = major == 3 ? Layout.forMinor(minor) : null;
      if (layout == null) {
        return new Inspection.Unsupported(name + " in " + image.name()
            + ": this plug-in knows the layouts of 3.11 and 3.12 only", evidence);
      }
      Optional<ModuleSymbol> eval = image.symbol(EVAL);
      Optional<ModuleSymbol> codeType = image.symbol(CODE_TYPE);
      if (eval.isEmpty() || !eval.get().function() || eval.get().size() == 0) {
        return new Inspection.Unsupported(name + " in " + image.name() + ": no sized function "
            + EVAL + ", so Python frames cannot be placed among native ones", evidence);
      }
      if (codeType.isEmpty()) {
        return new Inspection.Unsupported(name + " in " + image.name() + ": no " + CODE_TYPE
            + ", so code objects cannot be validated", evidence);
      }
      return new Inspection.Supported(new CPythonBinary(name, layout, evidence,
          new DiscoveredOffset(RUNTIME, runtime.get().value(), Provenance.SYMBOL, RUNTIME),
          new DiscoveredOffset(EVAL, eval.get().value(), Provenance.SYMBOL,
              EVAL + " (" + eval.get().size() + " bytes)"),
          eval.get().size(),
          new DiscoveredOffset(CODE_TYPE, codeType.get().value(), Provenance.SYMBOL, CODE_TYPE)));
    } catch (ImageReadException e) {
      return Inspection.notMine(); // a malformed image is nothing this plug-in can claim
    }
  }
}
