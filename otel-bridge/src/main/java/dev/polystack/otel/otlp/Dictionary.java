package dev.polystack.otel.otlp;

import com.google.protobuf.ByteString;
import io.opentelemetry.proto.common.v1.AnyValue;
import io.opentelemetry.proto.profiles.v1development.Function;
import io.opentelemetry.proto.profiles.v1development.KeyValueAndUnit;
import io.opentelemetry.proto.profiles.v1development.Line;
import io.opentelemetry.proto.profiles.v1development.Link;
import io.opentelemetry.proto.profiles.v1development.Location;
import io.opentelemetry.proto.profiles.v1development.Mapping;
import io.opentelemetry.proto.profiles.v1development.ProfilesDictionary;
import io.opentelemetry.proto.profiles.v1development.Stack;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The ProfilesDictionary of one request: every table deduplicated, and element 0 of every table
 * is the zero value (index 0 means "unset"), as the profiles proto requires. Entries are added
 * only when something refers to them, so nothing in the tables is unreferenced.
 */
final class Dictionary {
  private final Table<String> strings = new Table<>();
  private final Table<KeyValueAndUnit> attributes = new Table<>();
  private final Table<Function> functions = new Table<>();
  private final Table<Mapping> mappings = new Table<>();
  private final Table<Location> locations = new Table<>();
  private final Table<Stack> stacks = new Table<>();

  Dictionary() {
    strings.index("");
    attributes.index(KeyValueAndUnit.getDefaultInstance());
    functions.index(Function.getDefaultInstance());
    mappings.index(Mapping.getDefaultInstance());
    locations.index(Location.getDefaultInstance());
    stacks.index(Stack.getDefaultInstance());
  }

  int string(String s) {
    return strings.index(s);
  }

  int attribute(String key, String value) {
    return attributes.index(KeyValueAndUnit.newBuilder().setKeyStrindex(string(key))
        .setValue(AnyValue.newBuilder().setStringValue(value)).build());
  }

  int attribute(String key, double value) {
    return attributes.index(KeyValueAndUnit.newBuilder().setKeyStrindex(string(key))
        .setValue(AnyValue.newBuilder().setDoubleValue(value)).build());
  }

  int attribute(String key, boolean value) {
    return attributes.index(KeyValueAndUnit.newBuilder().setKeyStrindex(string(key))
        .setValue(AnyValue.newBuilder().setBoolValue(value)).build());
  }

  int attribute(String key, long value) {
    return attributes.index(KeyValueAndUnit.newBuilder().setKeyStrindex(string(key))
        .setValue(AnyValue.newBuilder().setIntValue(value)).build());
  }

  int function(String name, String systemName, String file, long startLine) {
    return functions.index(Function.newBuilder().setNameStrindex(string(name))
        .setSystemNameStrindex(string(systemName)).setFilenameStrindex(string(file))
        .setStartLine(startLine).build());
  }

  int mapping(Mapping mapping) {
    return mappings.index(mapping);
  }

  /**
   * A location; {@code function} 0 leaves out the line (an unsymbolized address), which a
   * consumer can still symbolize from the mapping's build id.
   */
  int location(int mapping, long address, int function, long line, List<Integer> attrs) {
    Location.Builder b = Location.newBuilder().setMappingIndex(mapping).setAddress(address)
        .addAllAttributeIndices(attrs);
    if (function != 0) {
      b.addLines(Line.newBuilder().setFunctionIndex(function).setLine(line));
    }
    return locations.index(b.build());
  }

  int stack(List<Integer> locationIndices) {
    if (locationIndices.isEmpty()) {
      return 0; // the zero Stack is the empty stack
    }
    return stacks.index(Stack.newBuilder().addAllLocationIndices(locationIndices).build());
  }

  ProfilesDictionary build() {
    return ProfilesDictionary.newBuilder()
        .addAllStringTable(strings.values)
        .addAllAttributeTable(attributes.values)
        .addAllFunctionTable(functions.values)
        .addAllMappingTable(mappings.values)
        .addAllLocationTable(locations.values)
        .addAllStackTable(stacks.values)
        // No sample carries a link; the table still holds its zero entry (all-zero ids).
        .addLinkTable(Link.newBuilder().setTraceId(ByteString.copyFrom(new byte[16]))
            .setSpanId(ByteString.copyFrom(new byte[8])))
        .build();
  }

  /** Insertion-ordered values and their indices; protobuf messages have value equality. */
  private static final class Table<T> {
    final List<T> values = new ArrayList<>();
    final Map<T, Integer> index = new HashMap<>();

    int index(T value) {
      return index.computeIfAbsent(value, v -> {
        values.add(v);
        return values.size() - 1;
      });
    }
  }
}
