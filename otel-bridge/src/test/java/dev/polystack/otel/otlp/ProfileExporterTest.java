package dev.polystack.otel.otlp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.polystack.otel.local.TestRecordings;
import dev.polystack.otel.model.Recording;
import io.opentelemetry.proto.collector.profiles.v1development.ExportProfilesServiceRequest;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import org.junit.jupiter.api.Test;

class ProfileExporterTest {
  private static final Recording INTERVAL = TestRecordings.service();
  private static final OtlpResource RESOURCE =
      OtlpResource.forTarget(INTERVAL.target(), OtlpConfig.defaults());

  /** A receiver that hangs until released, like a Collector that stopped reading. */
  private static final class StuckSender implements ProfilesSender {
    final CountDownLatch release = new CountDownLatch(1);

    @Override
    public ExportResult export(ExportProfilesServiceRequest request) {
      try {
        release.await();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return ExportResult.failure("interrupted", 1);
      }
      return ExportResult.success(1);
    }

    @Override
    public String target() {
      return "stuck";
    }

    @Override
    public void close() {}
  }

  @Test
  void aStuckReceiverCostsDroppedSamplesNeverABlockedCaller() {
    StuckSender sender = new StuckSender();
    ProfileExporter exporter = new ProfileExporter(sender, t -> RESOURCE, 2);
    long start = System.nanoTime();
    int accepted = 0;
    for (int i = 0; i < 20; i++) {
      accepted += exporter.offer(INTERVAL) ? 1 : 0;
    }
    assertTrue(System.nanoTime() - start < 1_000_000_000L, "offer blocked");
    assertTrue(accepted <= 3, "one in flight plus two queued, got " + accepted);
    ProfileExporter.Stats stats = exporter.close(Duration.ofMillis(200));
    assertFalse(stats.ok());
    // Every sample is either sent or counted as dropped.
    assertEquals(20L * INTERVAL.samples().size(), stats.samplesSent() + stats.samplesDropped());
    assertTrue(stats.messages().get(0).startsWith("export queue full"), stats.messages().get(0));
  }

  @Test
  void failuresAreCountedWithTheirMessage() {
    ProfilesSender failing = new ProfilesSender() {
      @Override
      public ExportResult export(ExportProfilesServiceRequest request) {
        return ExportResult.failure("gRPC UNAVAILABLE: connection refused", 5);
      }

      @Override
      public String target() {
        return "nowhere";
      }

      @Override
      public void close() {}
    };
    ProfileExporter exporter = new ProfileExporter(failing, t -> RESOURCE, 4);
    exporter.offer(INTERVAL);
    exporter.offer(INTERVAL);
    ProfileExporter.Stats stats = exporter.close(Duration.ofSeconds(5));
    assertEquals(2, stats.requestsFailed());
    assertEquals(2L * INTERVAL.samples().size(), stats.samplesDropped());
    assertEquals(java.util.List.of("gRPC UNAVAILABLE: connection refused"), stats.messages());
  }
}
