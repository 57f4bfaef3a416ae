package dev.polystack.host.sampling;

import dev.polystack.host.plugins.PluginGuard;
import dev.polystack.host.process.ModuleTable;
import dev.polystack.host.process.RuntimeBinding;
import dev.polystack.host.unwind.NativeFrame;
import dev.polystack.host.unwind.NativeUnwinder;
import dev.polystack.host.unwind.UnwindResult;
import dev.polystack.plugin.api.Capability;
import dev.polystack.plugin.api.Frame;
import dev.polystack.plugin.api.Registers;
import dev.polystack.plugin.api.SampleAttributes;
import dev.polystack.plugin.api.SampleRequest;
import dev.polystack.plugin.api.SampleWalk;
import dev.polystack.plugin.api.SampleWalker;
import dev.polystack.plugin.api.WalkRequest;
import dev.polystack.plugin.api.WalkResult;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Unwinds the native stack of a captured thread and splices in runtime frames: a native frame
 * whose PC lies in a plug-in's code is replaced by what the plug-in walks there. Runs on the
 * thread's capture, mostly after the target went on: in ptrace mode on the copy taken while the
 * thread was stopped (one instant) or, for a walk that must read more, while it is still stopped;
 * in perf and bpf modes on the kernel's copy from the sample, where reads outside the copy go to
 * the live process (docs/architecture.md, data flow).
 */
public final class StackWalker {
  private final NativeUnwinder unwinder;
  private final PluginGuard guard;
  private final int maxDepth;

  public StackWalker(int maxDepth, PluginGuard guard) {
    this.unwinder = new NativeUnwinder(maxDepth);
    this.guard = guard;
    this.maxDepth = maxDepth;
  }

  public RawStack walk(CapturedThread thread, ModuleTable table) {
    // The API's per-sample boundary: what an instance learns from here on is about this sample,
    // in the sample's walker for plug-ins that walk whole samples (API 1.10).
    Map<RuntimeBinding, SampleWalker> walkers = new java.util.IdentityHashMap<>();
    for (RuntimeBinding b : table.bindings()) {
      if (walksSamples(b)) {
        SampleWalker walker = guard.call(b.plugin(), "openSample", () -> {
          synchronized (b.instance()) {
            return b.instance().openSample(thread);
          }
        }).orElse(null);
        walkers.put(b, walker); // null: its frames end in an error frame
      } else {
        guard.call(b.plugin(), "beginSample", () -> {
          b.instance().beginSample(thread);
          return null;
        });
      }
    }
    // Code outside every module (JIT output) is offered to the plug-in that owns it, or, when
    // none claims it yet (a trace born since the last refresh), to each in turn; whoever
    // unwinds it also walks it.
    Map<Long, RuntimeBinding> claimed = new HashMap<>();
    NativeUnwinder.CallerStep jitStep = new NativeUnwinder.CallerStep() {
      @Override
      public Registers callerOf(Registers regs) {
        RuntimeBinding owner = table.bindingAt(regs.pc());
        for (RuntimeBinding b : owner != null ? List.of(owner) : table.bindings()) {
          Registers caller = guard.call(b.plugin(), "unwindCaller", () -> {
            if (!walkers.containsKey(b)) {
              return b.instance().unwindCaller(thread, regs);
            }
            SampleWalker walker = walkers.get(b);
            if (walker == null) {
              return null;
            }
            synchronized (b.instance()) {
              return walker.unwindCaller(regs);
            }
          }).orElse(null);
          if (caller != null) {
            claimed.put(regs.pc(), b);
            return caller;
          }
        }
        return null;
      }

      @Override
      public boolean owns(long pc) {
        return table.bindingAt(pc) != null;
      }
    };
    UnwindResult unwound = unwinder.unwind(thread.registers(), thread.memory(), table, jitStep);
    List<NativeFrame> natives = unwound.frames();
    RuntimeBinding[] owners = new RuntimeBinding[natives.size()];
    for (int i = 0; i < natives.size(); i++) {
      NativeFrame nf = natives.get(i);
      RuntimeBinding claimer = claimed.isEmpty() ? null : claimed.get(nf.pc());
      owners[i] = claimer != null ? claimer : table.bindingAt(nf.lookupPc());
    }
    Map<RuntimeBinding, SampleWalk> sampleWalks = sampleWalks(thread, natives, owners, walkers);
    List<RawFrame> frames = new ArrayList<>();
    List<String> errors = new ArrayList<>();
    // By identity: a binding is a record, and hashing its code ranges per frame showed up.
    Map<RuntimeBinding, Integer> segments = new java.util.IdentityHashMap<>();
    SampleAttributes attributes = SampleAttributes.EMPTY;
    for (int i = 0; i < natives.size() && frames.size() < maxDepth; i++) {
      NativeFrame nf = natives.get(i);
      RuntimeBinding binding = owners[i];
      if (binding == null) {
        frames.add(new RawFrame.Native(nf.pc(), nf.exactPc()));
        continue;
      }
      int segment = segments.merge(binding, 1, Integer::sum) - 1;
      WalkResult result;
      SampleWalk sampled = sampleWalks.get(binding);
      if (sampled != null) {
        result = sampled.replacements().getOrDefault(i, WalkResult.notMine());
        if (segment == 0) {
          attributes = attributes.orElse(owned(binding, sampled.attributes()));
        }
      } else {
        WalkRequest request = new WalkRequest(thread, nf.registers(), i == 0, segment);
        result = guard.call(binding.plugin(), "walk", () -> binding.instance().walk(request))
            .orElse(new WalkResult.Failed("plugin_exception", List.of()));
      }
      if (result instanceof WalkResult.Frames f) {
        f.frames().forEach(frame -> frames.add(new RawFrame.Runtime(frame)));
        attributes = attributes.orElse(owned(binding, f.sampleAttributes()));
      } else if (result instanceof WalkResult.Failed failed) {
        failed.partial().forEach(frame -> frames.add(new RawFrame.Runtime(frame)));
        attributes = attributes.orElse(owned(binding, failed.sampleAttributes()));
        String reason = binding.plugin().id() + "_" + failed.reason();
        frames.add(new RawFrame.Runtime(Frame.error(reason)));
        errors.add(reason);
      } else {
        frames.add(new RawFrame.Native(nf.pc(), nf.exactPc()));
      }
    }
    if (frames.size() > maxDepth) {
      frames.subList(maxDepth, frames.size()).clear();
    }
    if (!unwound.complete()) {
      frames.add(new RawFrame.Runtime(Frame.error(unwound.errorReason())));
      errors.add(unwound.errorReason());
    }
    return new RawStack(frames, errors, attributes);
  }

  /** Whether the binding's plug-in walks whole samples (API 1.10, {@code WALK_SAMPLES}). */
  private static boolean walksSamples(RuntimeBinding b) {
    return b.plugin().descriptor().has(Capability.WALK_SAMPLES);
  }

  /**
   * One {@code walk} per sample walker, with its binding's native frames, holding the
   * instance's monitor as the API promises. A replacement of a frame the request did not name
   * is refused (counted and reported once).
   */
  private Map<RuntimeBinding, SampleWalk> sampleWalks(CapturedThread thread,
      List<NativeFrame> natives, RuntimeBinding[] owners,
      Map<RuntimeBinding, SampleWalker> walkers) {
    if (walkers.isEmpty()) {
      return Map.of();
    }
    Map<RuntimeBinding, List<SampleRequest.OwnedFrame>> byBinding =
        new java.util.IdentityHashMap<>();
    for (int i = 0; i < owners.length; i++) {
      RuntimeBinding b = owners[i];
      if (b != null && walkers.containsKey(b)) {
        byBinding.computeIfAbsent(b, k -> new ArrayList<>())
            .add(new SampleRequest.OwnedFrame(i, natives.get(i).registers()));
      }
    }
    Map<RuntimeBinding, SampleWalk> out = new java.util.IdentityHashMap<>();
    byBinding.forEach((b, owned) -> {
      SampleWalker walker = walkers.get(b);
      SampleRequest request = new SampleRequest(thread, owned);
      SampleWalk walk = walker == null ? null : guard.call(b.plugin(), "walk", () -> {
        synchronized (b.instance()) {
          return walker.walk(request);
        }
      }).orElse(null);
      if (walk == null) { // no walker, or it threw: the leaf-most of its frames is an error
        walk = new SampleWalk(Map.of(owned.get(0).nativeIndex(),
            new WalkResult.Failed("plugin_exception", List.of())));
      } else {
        for (int index : walk.replacements().keySet()) {
          if (owned.stream().noneMatch(f -> f.nativeIndex() == index)) {
            guard.refuse(b.plugin(), "walk", "it replaced native frame " + index
                + ", which is not one of its frames in the request");
            walk = SampleWalk.NONE;
            break;
          }
        }
      }
      out.put(b, walk);
    });
    return out;
  }

  /**
   * The attributes under the plug-in's own {@code <id>.} namespace; any other key makes the
   * whole set a refused walk result, counted and reported once as a failure of the plug-in.
   */
  private SampleAttributes owned(RuntimeBinding binding, SampleAttributes reported) {
    if (reported.isEmpty()) {
      return reported;
    }
    String namespace = binding.plugin().id() + ".";
    for (String key : reported.asMap().keySet()) {
      if (!key.startsWith(namespace)) {
        guard.refuse(binding.plugin(), "walk", "sample attribute '" + key
            + "' is outside its namespace '" + namespace + "'");
        return SampleAttributes.EMPTY;
      }
    }
    return reported;
  }
}
