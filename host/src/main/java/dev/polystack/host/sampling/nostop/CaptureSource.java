package dev.polystack.host.sampling.nostop;

import dev.polystack.host.bpf.CaptureRecord;
import dev.polystack.host.bpf.ProcessEvent;
import dev.polystack.host.bpf.TickCapture;
import java.util.Map;
import java.util.function.Consumer;

/**
 * Where {@link BpfSampler} gets its tick records and installs its target and plans: a {@link
 * TickCapture} of its own, or one process's share of a capture that serves several
 * ({@link SharedCapture}).
 */
public interface CaptureSource extends ProcessTicks.PlanSlots {
  void addTarget(int pid, int stackBytes);

  void removeTarget(int pid);

  /**
   * Hands the ready records, parsed, to {@code records}, first waiting up to
   * {@code timeoutMillis} when none is ready; {@code malformed} runs for each that did not parse.
   */
  void poll(int timeoutMillis, Consumer<CaptureRecord> records, Runnable malformed);

  /** Cumulative counters by the kernel's names ({@code ring_full}, {@code ticks}, ...). */
  Map<String, Long> counters();

  /** A capture used by one process alone. */
  static CaptureSource of(TickCapture capture) {
    return new CaptureSource() {
      @Override
      public void addTarget(int pid, int stackBytes) {
        capture.addTarget(pid, stackBytes);
      }

      @Override
      public void removeTarget(int pid) {
        capture.removeTarget(pid);
      }

      @Override
      public void clearPlans(int pid) {
        capture.clearPlans(pid);
      }

      @Override
      public void setPlan(int pid, int index, byte[] encodedPlan) {
        capture.setPlan(pid, index, encodedPlan);
      }

      @Override
      public void poll(int timeoutMillis, Consumer<CaptureRecord> records, Runnable malformed) {
        capture.poll(timeoutMillis, bytes -> {
          if (ProcessEvent.isEvent(bytes)) {
            return; // a followed process's events: a record of chosen processes asks for none
          }
          CaptureRecord r;
          try {
            r = CaptureRecord.parse(bytes);
          } catch (IllegalArgumentException e) {
            malformed.run();
            return;
          }
          records.accept(r);
        });
      }

      @Override
      public Map<String, Long> counters() {
        return capture.counters();
      }
    };
  }
}
