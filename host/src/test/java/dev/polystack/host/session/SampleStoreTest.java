package dev.polystack.host.session;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.polystack.otel.model.Sample;
import dev.polystack.otel.model.StackTrace;
import dev.polystack.otel.model.ValueType;
import dev.polystack.plugin.api.Frame;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The bounded sample store: timed samples up to its bound, then merged entries, then refusal. */
class SampleStoreTest {
  private record Shape(StackTrace stack, Map<String, Object> attributes)
      implements SampleStore.Shape {}

  private static Shape shape(String function) {
    return new Shape(new StackTrace(List.of(new Frame(Frame.NATIVE, 0x1000, function, "", 0, 0,
        "/bin/x", Map.of()))), Map.of("luajit.vmstate", "I"));
  }

  @Test
  void keepsTimedSamplesInOrderAcrossChunks() {
    SampleStore store = new SampleStore(3 * SampleStore.CHUNK, 10);
    Shape a = shape("a");
    Shape b = shape("b");
    int n = 2 * SampleStore.CHUNK + 7;
    for (int i = 0; i < n; i++) {
      assertTrue(store.add(i % 5, "t" + (i % 5), 1000L + i, i % 2 == 0 ? a : b, 1 + i % 3));
    }
    List<Sample> samples = store.samples();
    assertEquals(n, samples.size());
    for (int i = 0; i < n; i++) {
      Sample s = samples.get(i);
      assertEquals(i % 5, s.tid());
      assertEquals("t" + (i % 5), s.threadName());
      assertEquals(1000L + i, s.epochNanos());
      assertSame((i % 2 == 0 ? a : b).stack(), s.stack());
      assertEquals(Map.of("luajit.vmstate", "I"), s.attributes());
      assertEquals(1 + i % 3, s.periods());
      assertEquals(1, s.count());
    }
    assertEquals(0, store.mergedSamples());
  }

  @Test
  void pluginValuesStayWithTimedSamplesAndAddUpInMergedOnes() {
    ValueType held = new ValueType("x.held", "count");
    SampleStore store = new SampleStore(2, 4);
    Shape a = shape("a");
    assertTrue(store.add(1, "main", 1, a, 1, Map.of(held, 1L)));
    assertTrue(store.add(1, "main", 2, a, 1));
    // Merged: 1 + 0 + 1, and a sample without a value adds nothing.
    assertTrue(store.add(1, "main", 3, a, 1, Map.of(held, 1L)));
    assertTrue(store.add(1, "main", 4, a, 1, Map.of(held, 0L)));
    assertTrue(store.add(1, "main", 5, a, 1));
    assertTrue(store.add(1, "main", 6, a, 1, Map.of(held, 1L)));
    List<Sample> samples = store.samples();
    assertEquals(3, samples.size());
    assertEquals(Map.of(held, 1L), samples.get(0).pluginValues());
    assertEquals(Map.of(), samples.get(1).pluginValues());
    assertEquals(4, samples.get(2).count());
    assertEquals(Map.of(held, 2L), samples.get(2).pluginValues());
    store.clear();
    assertTrue(store.add(1, "main", 7, a, 1));
    assertEquals(Map.of(), store.samples().get(0).pluginValues(), "cleared with the rows");
  }

  @Test
  void mergesBeyondTheBoundPerThreadAndStackAndRefusesBeyondTheMergedBound() {
    SampleStore store = new SampleStore(4, 2);
    Shape a = shape("a");
    Shape b = shape("b");
    for (int i = 0; i < 4; i++) {
      assertTrue(store.add(1, "main", i, a, 1));
    }
    // Over the timed bound: thread 1 on a (x3, periods 1+2+1), thread 2 on a (x1).
    assertTrue(store.add(1, "main", 10, a, 1));
    assertTrue(store.add(1, "main", 11, a, 2));
    assertTrue(store.add(2, "worker", 12, a, 1));
    assertTrue(store.add(1, "main", 13, a, 1));
    // A third merged entry is over the merged bound; existing ones still take samples.
    assertFalse(store.add(1, "main", 14, b, 1));
    assertTrue(store.add(2, "worker", 15, a, 1));
    List<Sample> samples = store.samples();
    assertEquals(6, samples.size());
    Sample main = samples.get(4);
    assertEquals(1, main.tid());
    assertEquals(3, main.count());
    assertEquals(4, main.periods());
    assertEquals(13, main.epochNanos());
    assertTrue(main.merged());
    Sample worker = samples.get(5);
    assertEquals(2, worker.tid());
    assertEquals(2, worker.count());
    assertEquals(15, worker.epochNanos());
    assertEquals(5, store.mergedSamples());
    assertEquals(4 + 5, Sample.count(samples));
    store.clear();
    assertTrue(store.isEmpty());
    assertEquals(List.of(), store.samples());
  }
}
