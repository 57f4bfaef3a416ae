package dev.polystack.otel.otlp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.polystack.plugin.api.CallRecord;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.common.Attributes;
import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

class CallExporterTest {

  @Test
  void recordFieldsBecomeSpanAttributes() {
    Map<String, Object> args = new LinkedHashMap<>();
    args.put("clockid", "CLOCK_MONOTONIC");
    args.put("tp", 0x7ffc1000L);
    CallRecord call = new CallRecord("clock_gettime", "LINUX_2.6", 10, 11, args, -22, -22, "EINVAL",
        Map.of("tv_sec", 5L), 0x401000L, 0x7ffc0ff8L, 100, 250);
    Attributes a = CallExporter.attributes(call);
    assertEquals("clock_gettime", a.get(AttributeKey.stringKey("code.function.name")));
    assertEquals("LINUX_2.6", a.get(AttributeKey.stringKey("vdso.symbol.version")));
    assertEquals(11L, a.get(AttributeKey.longKey("thread.id")));
    assertEquals("CLOCK_MONOTONIC", a.get(AttributeKey.stringKey("vdso.arg.clockid")));
    assertEquals(0x7ffc1000L, a.get(AttributeKey.longKey("vdso.arg.tp")));
    assertEquals(5L, a.get(AttributeKey.longKey("vdso.out.tv_sec")));
    assertEquals(-22L, a.get(AttributeKey.longKey("vdso.return_value")));
    assertEquals("EINVAL", a.get(AttributeKey.stringKey("error.type")));
    assertEquals("0x401000", a.get(AttributeKey.stringKey("vdso.return_address")));
  }

  @Test
  void offsetMapsMonotonicToNow() {
    long epoch = System.nanoTime() + CallExporter.monotonicToEpochOffsetNanos();
    long now = System.currentTimeMillis() * 1_000_000L;
    assertTrue(Math.abs(epoch - now) < 50_000_000L, "offset off by " + (epoch - now) + " ns");
  }
}
