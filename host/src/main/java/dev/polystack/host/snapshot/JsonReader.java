package dev.polystack.host.snapshot;

import com.google.gson.Strictness;
import com.google.gson.stream.JsonToken;
import java.io.IOException;
import java.io.StringReader;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Reads snapshot headers with Gson's streaming reader in strict mode (objects to LinkedHashMap,
 * arrays to List, numbers to Long or Double). Input is bounded in size and nesting; malformed
 * input fails with IllegalArgumentException only, with a one-line message.
 */
final class JsonReader {
  /** A header is one archive entry; nothing larger is read. */
  static final long MAX_CHARS = SnapshotFile.MAX_ENTRY;
  /** Snapshot headers nest four levels; this is generous and keeps recursion shallow. */
  static final int MAX_DEPTH = 64;

  private JsonReader() {
  }

  static Object parse(String text) {
    if (text.length() > MAX_CHARS) {
      throw new IllegalArgumentException("JSON text of " + text.length()
          + " characters, more than " + MAX_CHARS);
    }
    com.google.gson.stream.JsonReader in =
        new com.google.gson.stream.JsonReader(new StringReader(text));
    in.setStrictness(Strictness.STRICT);
    in.setNestingLimit(MAX_DEPTH);
    try {
      Object value = value(in);
      if (in.peek() != JsonToken.END_DOCUMENT) {
        throw new IllegalArgumentException("trailing text after the value at " + in.getPath());
      }
      return value;
    } catch (IOException | IllegalStateException e) {
      // Gson's messages end in a line pointing at its troubleshooting guide and may advise
      // lenient parsing: keep the first line, without that advice.
      String why = String.valueOf(e.getMessage()).lines().findFirst().orElse("")
          .replace("Use JsonReader.setStrictness(Strictness.LENIENT) to accept malformed JSON",
              "malformed JSON");
      throw new IllegalArgumentException(why.isEmpty() ? "malformed JSON" : why);
    }
  }

  private static Object value(com.google.gson.stream.JsonReader in) throws IOException {
    switch (in.peek()) {
      case BEGIN_OBJECT -> {
        Map<String, Object> map = new LinkedHashMap<>();
        in.beginObject();
        while (in.hasNext()) {
          String key = in.nextName();
          if (map.put(key, value(in)) != null) {
            throw new IllegalArgumentException("duplicate key " + key + " at " + in.getPath());
          }
        }
        in.endObject();
        return map;
      }
      case BEGIN_ARRAY -> {
        List<Object> list = new ArrayList<>();
        in.beginArray();
        while (in.hasNext()) {
          list.add(value(in));
        }
        in.endArray();
        return list;
      }
      case STRING -> {
        return in.nextString();
      }
      case NUMBER -> {
        String n = in.nextString();
        try {
          return n.matches("-?(0|[1-9][0-9]*)") ? (Object) Long.parseLong(n)
              : Double.parseDouble(n);
        } catch (NumberFormatException e) {
          throw new IllegalArgumentException("number " + n + " out of range at " + in.getPath());
        }
      }
      case BOOLEAN -> {
        return in.nextBoolean();
      }
      case NULL -> {
        in.nextNull();
        return null;
      }
      default -> throw new IllegalArgumentException("unexpected " + in.peek() + " at " + in.getPath());
    }
  }
}
