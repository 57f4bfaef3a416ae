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
import dev.polystack.plugin.api.SampleType;
import dev.polystack.plugin.api.SampleWalk;
import dev.polystack.plugin.api.SampleWalker;
import dev.polystack.plugin.api.WalkResult;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.IdentityHashMap;
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
    // The API's per-sample boundary: what an instance learns from here on is about this
    // sample, in the sample's walker.
    Map<RuntimeBinding, SampleWalker> walkers = new IdentityHashMap<>();
    for (RuntimeBinding b : table.bindings()) {
      if (!b.plugin().descriptor().has(Capability.WALK_FRAMES)) {
        continue; // its code stays native, as any module's
      }
      SampleWalker walker = guard.call(b.plugin(), "openSample", () -> {
        synchronized (b.instance()) {
          return b.instance().openSample(thread);
        }
      }).orElse(null);
      walkers.put(b, walker); // null: its frames end in an error frame
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
          SampleWalker walker = walkers.get(b);
          if (walker == null) {
            continue;
          }
          Registers caller = guard.call(b.plugin(), "unwindCaller", () -> {
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
    SampleAttributes attributes = SampleAttributes.EMPTY;
    Map<SampleType, Long> values = new HashMap<>();
    Map<RuntimeBinding, Boolean> merged = new IdentityHashMap<>();
    for (int i = 0; i < natives.size() && frames.size() < maxDepth; i++) {
      NativeFrame nf = natives.get(i);
      RuntimeBinding binding = owners[i];
      SampleWalk sampled = binding == null ? null : sampleWalks.get(binding);
      if (sampled == null) {
        frames.add(new RawFrame.Native(nf.pc(), nf.exactPc()));
        continue;
      }
      if (merged.put(binding, Boolean.TRUE) == null) { // the leaf-most walker's value per key
        attributes = attributes.orElse(sampled.attributes());
        sampled.values().forEach((type, v) -> values.putIfAbsent(binding.plugin().sampleType(type),
            v));
      }
      WalkResult result = sampled.replacements().get(i);
      if (result instanceof WalkResult.Frames f) {
        f.frames().forEach(frame -> frames.add(new RawFrame.Runtime(frame)));
      } else if (result instanceof WalkResult.Failed failed) {
        failed.partial().forEach(frame -> frames.add(new RawFrame.Runtime(frame)));
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
    return new RawStack(frames, errors, attributes, values);
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
        new IdentityHashMap<>();
    for (int i = 0; i < owners.length; i++) {
      RuntimeBinding b = owners[i];
      if (b != null && walkers.containsKey(b)) {
        byBinding.computeIfAbsent(b, k -> new ArrayList<>())
            .add(new SampleRequest.OwnedFrame(i, natives.get(i).registers()));
      }
    }
    Map<RuntimeBinding, SampleWalk> out = new IdentityHashMap<>();
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
        walk = checked(b, walk, owned);
      }
      out.put(b, walk);
    });
    return out;
  }

  /**
   * {@code walk} as the API allows it: a replacement of a frame the request did not name
   * refuses the whole walk, an attribute outside the plug-in's namespace or a value of a sample
   * type it did not declare refuses those; each counted and reported once as a failure of the
   * plug-in's {@code walk}.
   */
  private SampleWalk checked(RuntimeBinding b, SampleWalk walk,
      List<SampleRequest.OwnedFrame> owned) {
    for (int index : walk.replacements().keySet()) {
      if (owned.stream().noneMatch(f -> f.nativeIndex() == index)) {
        guard.refuse(b.plugin(), "walk", "it replaced native frame " + index
            + ", which is not one of its frames in the request");
        return SampleWalk.NONE;
      }
    }
    SampleAttributes attributes = walk.attributes();
    String namespace = b.plugin().id() + ".";
    for (String key : attributes.asMap().keySet()) {
      if (!key.startsWith(namespace)) {
        guard.refuse(b.plugin(), "walk", "sample attribute '" + key
            + "' is outside its namespace '" + namespace + "'");
        attributes = SampleAttributes.EMPTY;
        break;
      }
    }
    Map<String, Long> values = walk.values();
    for (String type : values.keySet()) {
      if (b.plugin().sampleType(type) == null) {
        guard.refuse(b.plugin(), "walk", "a value for sample type '" + type
            + "', which it does not declare");
        values = Map.of();
        break;
      }
    }
    return attributes == walk.attributes() && values == walk.values() ? walk
        : new SampleWalk(walk.replacements(), attributes, values);
  }
}
