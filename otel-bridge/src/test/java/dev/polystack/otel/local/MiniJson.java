package dev.polystack.otel.local;

import com.google.gson.Gson;
import com.google.gson.GsonBuilder;
import com.google.gson.Strictness;
import com.google.gson.ToNumberPolicy;

/**
 * Strict JSON parsing for tests through Gson (objects to Map, arrays to List, numbers to Long or
 * Double), so output is checked by parsing it rather than by matching text. Malformed or
 * trailing text fails with Gson's JsonSyntaxException.
 */
final class MiniJson {
  private static final Gson GSON = new GsonBuilder()
      .setStrictness(Strictness.STRICT)
      .setObjectToNumberStrategy(ToNumberPolicy.LONG_OR_DOUBLE)
      .create();

  private MiniJson() {
  }

  static Object parse(String text) {
    return GSON.fromJson(text, Object.class);
  }
}
