package dev.polystack.otel.model;

import java.util.List;
import java.util.Objects;

/**
 * What one value of a sample measures, as pprof's ValueType names it: {@code alloc_space} in
 * {@code bytes}. Allocation recordings carry Go's four heap types, which {@code go tool pprof
 * -sample_index} knows.
 */
public record ValueType(String type, String unit) {
  public static final ValueType ALLOC_OBJECTS = new ValueType("alloc_objects", "count");
  public static final ValueType ALLOC_SPACE = new ValueType("alloc_space", "bytes");
  public static final ValueType INUSE_OBJECTS = new ValueType("inuse_objects", "count");
  public static final ValueType INUSE_SPACE = new ValueType("inuse_space", "bytes");
  /** Bytes allocated between two allocation samples: an allocation recording's period. */
  public static final ValueType SPACE = new ValueType("space", "bytes");
  /** Calls of a probed function (record --event calls), estimated from the sampled ones. */
  public static final ValueType CALLS = new ValueType("calls", "count");
  /** The values of an allocation sample, in this order. */
  public static final List<ValueType> ALLOCATIONS =
      List.of(ALLOC_OBJECTS, ALLOC_SPACE, INUSE_OBJECTS, INUSE_SPACE);

  public ValueType {
    Objects.requireNonNull(type, "type");
    Objects.requireNonNull(unit, "unit");
    if (type.isEmpty()) {
      throw new IllegalArgumentException("a value type has a name");
    }
  }
}
