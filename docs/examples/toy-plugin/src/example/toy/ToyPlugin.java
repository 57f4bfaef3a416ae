package example.toy;

import dev.polystack.plugin.api.ApiVersion;
import dev.polystack.plugin.api.Capability;
import dev.polystack.plugin.api.DiscoveredOffset;
import dev.polystack.plugin.api.ImageReadException;
import dev.polystack.plugin.api.Inspection;
import dev.polystack.plugin.api.ModuleImage;
import dev.polystack.plugin.api.ModuleSymbol;
import dev.polystack.plugin.api.Provenance;
import dev.polystack.plugin.api.RuntimePlugin;
import dev.polystack.plugin.api.PluginDescriptor;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * Example out-of-tree plug-in for the toy interpreter of toy_interp.c, built against plugin-api
 * alone. It recognises the runtime by two exported symbols (never by file name), reports where
 * they are with provenance, and replaces the interpreter loop's native frame with the script
 * functions the toy VM keeps in its global {@code toy_state}.
 */
public final class ToyPlugin implements RuntimePlugin {
  static final String ID = "toy";
  static final String LOOP = "toy_interp_run";
  static final String STATE = "toy_state";

  @Override
  public PluginDescriptor descriptor() {
    // The oldest API it needs: 2.0, whose sample walker is the only walk.
    return new PluginDescriptor(ID, "2.0.0", new ApiVersion(2, 0), "toy",
        Set.of(Capability.DETECT, Capability.DISCOVER_OFFSETS, Capability.WALK_FRAMES,
            Capability.CAPTURE_AT_TICK),
        "example: script frames of the toy interpreter (docs/plugin-authoring.md)");
  }

  @Override
  public Inspection inspect(ModuleImage image) {
    try {
      Optional<ModuleSymbol> loop = image.symbol(LOOP);
      Optional<ModuleSymbol> state = image.symbol(STATE);
      if (loop.isEmpty() || state.isEmpty()) {
        return Inspection.notMine();
      }
      List<String> evidence = List.of("exports " + LOOP + " and " + STATE);
      if (!loop.get().function() || loop.get().size() == 0) {
        return new Inspection.Unsupported(LOOP + " in " + image.name()
            + " is not a sized function", evidence);
      }
      if (state.get().size() < ToyBinary.STATE_SIZE) {
        return new Inspection.Unsupported(STATE + " in " + image.name() + " has "
            + state.get().size() + " bytes, expected " + ToyBinary.STATE_SIZE, evidence);
      }
      return new Inspection.Supported(new ToyBinary(evidence,
          new DiscoveredOffset(LOOP, loop.get().value(), Provenance.SYMBOL, LOOP),
          loop.get().size(),
          new DiscoveredOffset(STATE, state.get().value(), Provenance.SYMBOL, STATE)));
    } catch (ImageReadException e) {
      return Inspection.notMine(); // a malformed image is not something we can claim
    }
  }
}
