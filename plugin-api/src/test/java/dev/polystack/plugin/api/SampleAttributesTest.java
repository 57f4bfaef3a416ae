package dev.polystack.plugin.api;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class SampleAttributesTest {

  @Test
  void keepsEachValueWithItsTypeSortedByKey() {
    SampleAttributes a = SampleAttributes.builder().put("x.state", "N").put("x.trace", 12)
        .put("x.ratio", 0.5).put("x.gc", true).build();
    assertEquals(List.of("x.gc", "x.ratio", "x.state", "x.trace"),
        List.copyOf(a.asMap().keySet()));
    assertEquals(Map.of("x.state", "N", "x.trace", 12L, "x.ratio", 0.5, "x.gc", true), a.asMap());
    assertEquals(a, SampleAttributes.of(Map.of("x.state", "N", "x.trace", 12, "x.ratio", 0.5,
        "x.gc", true)), "an Integer is kept as a Long");
    assertThrows(UnsupportedOperationException.class, () -> a.asMap().put("x.y", "z"));
  }

  @Test
  void refusesWhatOutputsCannotCarry() {
    assertThrows(IllegalArgumentException.class, () -> SampleAttributes.of(Map.of("x.y",
        List.of())));
    assertThrows(IllegalArgumentException.class, () -> SampleAttributes.builder().put(" ", 1));
    assertThrows(IllegalArgumentException.class, () -> SampleAttributes.builder()
        .put("x.y", "z".repeat(SampleAttributes.MAX_LENGTH + 1)));
    SampleAttributes.Builder full = SampleAttributes.builder();
    for (int i = 0; i < SampleAttributes.MAX_ATTRIBUTES; i++) {
      full.put("x.k" + i, i);
    }
    full.put("x.k0", "replaced"); // a key already there is no new attribute
    assertThrows(IllegalArgumentException.class, () -> full.put("x.one_more", 1));
  }

  @Test
  void orElseKeepsThisValueForAKeyBoth() {
    SampleAttributes leaf = SampleAttributes.builder().put("x.state", "N").build();
    SampleAttributes caller = SampleAttributes.builder().put("x.state", "I").put("x.depth", 3)
        .build();
    assertEquals(Map.of("x.state", "N", "x.depth", 3L), leaf.orElse(caller).asMap());
    assertSame(leaf, leaf.orElse(SampleAttributes.EMPTY));
    assertSame(caller, SampleAttributes.EMPTY.orElse(caller));
    assertTrue(SampleAttributes.builder().build().isEmpty());
  }

  @Test
  void sampleWalksCarryValuesOfNoNegativeSize() {
    SampleWalk walk = new SampleWalk(Map.of(0, new WalkResult.Frames(List.of())),
        SampleAttributes.EMPTY, Map.of("x.b", 2L, "x.a", 1L));
    assertEquals(List.of("x.a", "x.b"), List.copyOf(walk.values().keySet()));
    assertEquals(Map.of(), new SampleWalk(Map.of()).values());
    assertThrows(IllegalArgumentException.class, () -> new SampleWalk(Map.of(),
        SampleAttributes.EMPTY, Map.of("x.a", -1L)));
  }

  @Test
  void sampleTypeDeclarationsStayInTheNamespaceOnceEach() {
    SampleType held = new SampleType("x.held", "count");
    assertEquals(java.util.Optional.empty(), SampleType.declarationProblem("x", List.of(held)));
    assertEquals("sample type 'y.held' is outside its namespace 'x.'", SampleType
        .declarationProblem("x", List.of(new SampleType("y.held", "count"))).orElseThrow());
    assertEquals("sample type 'x.held' is declared twice",
        SampleType.declarationProblem("x", List.of(held, held)).orElseThrow());
    assertEquals("it declares 5 sample types, more than 4", SampleType.declarationProblem("x",
        java.util.Collections.nCopies(5, held)).orElseThrow());
    assertThrows(IllegalArgumentException.class, () -> new SampleType("x.Held", "count"));
    assertThrows(IllegalArgumentException.class, () -> new SampleType("x.held", "per cent"));
  }
}
