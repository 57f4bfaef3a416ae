package dev.polystack.host.snapshot;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A strict, small JSON reader for snapshot headers (objects to LinkedHashMap, arrays to List,
 * numbers to Long or Double). Malformed input fails with IllegalArgumentException only.
 */
final class JsonReader {
  private final String s;
  private int i;

  private JsonReader(String s) {
    this.s = s;
  }

  static Object parse(String text) {
    JsonReader p = new JsonReader(text);
    try {
      Object value = p.value();
      p.space();
      if (p.i != text.length()) {
        throw p.error("trailing text");
      }
      return value;
    } catch (IndexOutOfBoundsException | NumberFormatException | StackOverflowError e) {
      throw p.error("malformed JSON");
    }
  }

  private Object value() {
    space();
    if (i >= s.length()) {
      throw error("unexpected end");
    }
    char c = s.charAt(i);
    switch (c) {
      case '{':
        return object();
      case '[':
        return array();
      case '"':
        return string();
      case 't':
        return literal("true", Boolean.TRUE);
      case 'f':
        return literal("false", Boolean.FALSE);
      case 'n':
        return literal("null", null);
      default:
        return number();
    }
  }

  private Map<String, Object> object() {
    Map<String, Object> map = new LinkedHashMap<>();
    i++;
    space();
    if (s.charAt(i) == '}') {
      i++;
      return map;
    }
    while (true) {
      space();
      String key = string();
      space();
      expect(':');
      if (map.put(key, value()) != null) {
        throw error("duplicate key " + key);
      }
      space();
      if (s.charAt(i) == '}') {
        i++;
        return map;
      }
      expect(',');
    }
  }

  private List<Object> array() {
    List<Object> list = new ArrayList<>();
    i++;
    space();
    if (s.charAt(i) == ']') {
      i++;
      return list;
    }
    while (true) {
      list.add(value());
      space();
      if (s.charAt(i) == ']') {
        i++;
        return list;
      }
      expect(',');
    }
  }

  private String string() {
    expect('"');
    StringBuilder sb = new StringBuilder();
    while (true) {
      char c = s.charAt(i++);
      if (c == '"') {
        return sb.toString();
      }
      if (c < 0x20) {
        throw error("raw control character in string");
      }
      if (c != '\\') {
        sb.append(c);
        continue;
      }
      char e = s.charAt(i++);
      switch (e) {
        case '"', '\\', '/' -> sb.append(e);
        case 'b' -> sb.append('\b');
        case 'f' -> sb.append('\f');
        case 'n' -> sb.append('\n');
        case 'r' -> sb.append('\r');
        case 't' -> sb.append('\t');
        case 'u' -> {
          sb.append((char) Integer.parseInt(s.substring(i, i + 4), 16));
          i += 4;
        }
        default -> throw error("bad escape \\" + e);
      }
    }
  }

  private Object number() {
    int start = i;
    while (i < s.length() && "+-0123456789.eE".indexOf(s.charAt(i)) >= 0) {
      i++;
    }
    String n = s.substring(start, i);
    if (n.isEmpty()) {
      throw error("unexpected character");
    }
    return n.matches("-?(0|[1-9][0-9]*)") ? (Object) Long.parseLong(n) : Double.parseDouble(n);
  }

  private Object literal(String word, Object value) {
    if (!s.startsWith(word, i)) {
      throw error("expected " + word);
    }
    i += word.length();
    return value;
  }

  private void expect(char c) {
    if (i >= s.length() || s.charAt(i) != c) {
      throw error("expected '" + c + "'");
    }
    i++;
  }

  private void space() {
    while (i < s.length() && " \t\r\n".indexOf(s.charAt(i)) >= 0) {
      i++;
    }
  }

  private IllegalArgumentException error(String what) {
    return new IllegalArgumentException(what + " at offset " + i + " near '"
        + s.substring(Math.max(0, i - 20), Math.min(s.length(), i + 20)) + "'");
  }
}
