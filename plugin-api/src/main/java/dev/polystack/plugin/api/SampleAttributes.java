package dev.polystack.plugin.api;

import java.util.Collections;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;

/**
 * Typed facts about one sample that a walk reports with its frames (since API 1.9): what state
 * the runtime was in, which compiled unit ran. Values are strings, longs, doubles or booleans,
 * as OpenTelemetry attributes carry them; the host puts them on the sample in every output
 * (docs/plugin-authoring.md, "Sample attributes", gives the mapping to pprof labels and OTLP).
 *
 * <p>Keys belong to the plug-in: the host keeps only keys under {@code <plug-in id>.} (e.g.
 * {@code luajit.vmstate}), and refuses the others, counted as a failure of the plug-in's walk.
 * Immutable; equal when their keys and values are.
 *
 * @since 1.9
 */
public final class SampleAttributes {
  /** No attributes. */
  public static final SampleAttributes EMPTY = new SampleAttributes(new TreeMap<>());
  /** Most attributes one sample carries, from all of its walks together. */
  public static final int MAX_ATTRIBUTES = 16;
  /** Longest key, and longest string value, in characters. */
  public static final int MAX_LENGTH = 256;

  private final Map<String, Object> values;

  private SampleAttributes(TreeMap<String, Object> values) {
    this.values = Collections.unmodifiableMap(values);
  }

  public static Builder builder() {
    return new Builder();
  }

  /**
   * The attributes of {@code values}, whose values must be {@link String}, {@link Long}, {@link
   * Integer} (kept as a long), {@link Double} or {@link Boolean}.
   *
   * @throws IllegalArgumentException for another type, a blank or too long key or string, or
   *     more than {@link #MAX_ATTRIBUTES}
   */
  public static SampleAttributes of(Map<String, ?> values) {
    Builder b = builder();
    values.forEach(b::putValue);
    return b.build();
  }

  /** Key to value ({@code String}, {@code Long}, {@code Double} or {@code Boolean}), by key. */
  public Map<String, Object> asMap() {
    return values;
  }

  public boolean isEmpty() {
    return values.isEmpty();
  }

  /** These attributes with {@code other}'s added where this has no value for the key. */
  public SampleAttributes orElse(SampleAttributes other) {
    if (other.isEmpty()) {
      return this;
    }
    if (isEmpty()) {
      return other;
    }
    Builder b = builder();
    other.values.forEach(b::putValue);
    values.forEach(b::putValue);
    return b.build();
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof SampleAttributes a && values.equals(a.values);
  }

  @Override
  public int hashCode() {
    return values.hashCode();
  }

  @Override
  public String toString() {
    return values.toString();
  }

  /** Builds {@link SampleAttributes}; a later value for a key replaces the earlier one. */
  public static final class Builder {
    private final TreeMap<String, Object> values = new TreeMap<>();

    private Builder() {}

    public Builder put(String key, String value) {
      Objects.requireNonNull(value, "value");
      if (value.length() > MAX_LENGTH) {
        throw new IllegalArgumentException("attribute '" + key + "': a string of "
            + value.length() + " characters, longer than " + MAX_LENGTH);
      }
      return putChecked(key, value);
    }

    public Builder put(String key, long value) {
      return putChecked(key, value);
    }

    public Builder put(String key, double value) {
      return putChecked(key, value);
    }

    public Builder put(String key, boolean value) {
      return putChecked(key, value);
    }

    private Builder putValue(String key, Object value) {
      if (value instanceof String s) {
        return put(key, s);
      }
      if (value instanceof Long || value instanceof Double || value instanceof Boolean) {
        return putChecked(key, value);
      }
      if (value instanceof Integer i) {
        return putChecked(key, (long) i);
      }
      throw new IllegalArgumentException("attribute '" + key + "': values are String, Long,"
          + " Double or Boolean, not " + (value == null ? "null" : value.getClass().getName()));
    }

    private Builder putChecked(String key, Object value) {
      Objects.requireNonNull(key, "key");
      if (key.isBlank() || key.length() > MAX_LENGTH) {
        throw new IllegalArgumentException("attribute keys are 1.." + MAX_LENGTH
            + " characters, not blank: '" + key + "'");
      }
      if (!values.containsKey(key) && values.size() == MAX_ATTRIBUTES) {
        throw new IllegalArgumentException("more than " + MAX_ATTRIBUTES + " attributes");
      }
      values.put(key, value);
      return this;
    }

    public SampleAttributes build() {
      return values.isEmpty() ? EMPTY : new SampleAttributes(new TreeMap<>(values));
    }
  }
}
