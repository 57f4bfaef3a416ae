package dev.polystack.host.launch;

import dev.polystack.host.sys.Native;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import jnr.ffi.Pointer;

/**
 * A NULL-terminated {@code char *[]}. Holds on to every string's native memory: jnr frees it once
 * the Java Pointer is unreachable, so the array must outlive the native call that reads it.
 */
final class CStrings {
  private final List<Pointer> keepAlive = new ArrayList<>();
  private final Pointer array;

  CStrings(List<String> values) {
    array = Native.allocate(8 * (values.size() + 1));
    for (int i = 0; i < values.size(); i++) {
      byte[] b = values.get(i).getBytes(StandardCharsets.UTF_8);
      Pointer s = Native.allocate(b.length + 1);
      s.put(0, b, 0, b.length);
      s.putByte(b.length, (byte) 0);
      keepAlive.add(s);
      array.putLong(8L * i, s.address());
    }
    array.putLong(8L * values.size(), 0);
  }

  Pointer pointer() {
    return array;
  }
}
