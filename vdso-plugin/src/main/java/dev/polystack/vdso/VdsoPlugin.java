package dev.polystack.vdso;

import dev.polystack.plugin.api.ApiVersion;
import dev.polystack.plugin.api.ArgumentDecoder;
import dev.polystack.plugin.api.Capability;
import dev.polystack.plugin.api.ImageReadException;
import dev.polystack.plugin.api.ModuleImage;
import dev.polystack.plugin.api.ModuleSymbol;
import dev.polystack.plugin.api.PluginDescriptor;
import dev.polystack.plugin.api.PluginVersions;
import dev.polystack.plugin.api.ProbeMonitor;
import dev.polystack.plugin.api.ProbePlan;
import dev.polystack.plugin.api.ProbePlanException;
import dev.polystack.plugin.api.ProbePlugin;
import dev.polystack.plugin.api.ProbeRequest;
import java.util.Optional;
import java.util.Set;

/**
 * The vDSO call tracer: plans entry and return breakpoints on the kernel-supplied functions
 * (clock_gettime and friends) and pairs the hits into calls; and decodes the registers of
 * those functions, in the vDSO and in the C library, at sites the host places itself.
 */
public final class VdsoPlugin implements ProbePlugin {

  private final PluginDescriptor descriptor =
      new PluginDescriptor(
          "vdso",
          PluginVersions.of(VdsoPlugin.class),
          ApiVersion.CURRENT,
          "",
          Set.of(Capability.PLAN_PROBES, Capability.DECODE_CALLS),
          "vDSO call tracer: entry/return hardware breakpoints on the vDSO's exports");

  @Override
  public PluginDescriptor descriptor() {
    return descriptor;
  }

  @Override
  public boolean accepts(ModuleImage image) {
    try {
      return !Inventory.of(image).exports().isEmpty();
    } catch (ImageReadException e) {
      return false;
    }
  }

  @Override
  public ProbePlan plan(ModuleImage image, ProbeRequest request) throws ProbePlanException {
    Inventory inventory;
    try {
      inventory = Inventory.of(image);
    } catch (ImageReadException e) {
      throw new ProbePlanException("cannot read the vDSO image: " + e.getMessage());
    }
    return Planner.plan(inventory, request, image);
  }

  @Override
  public ProbeMonitor monitor(ProbePlan plan) {
    return new CallPairing();
  }

  @Override
  public Optional<ArgumentDecoder> argumentDecoder(ModuleImage image, ModuleSymbol symbol) {
    return ArgumentDecoders.forSymbol(image, symbol);
  }
}
