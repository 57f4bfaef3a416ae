package dev.polystack.plugin.api;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.reflect.Modifier;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;
import org.junit.jupiter.api.Test;

/**
 * What japicmp does not check: a plug-in compiled against an older API uses enum constants by
 * ordinal (a {@code switch} compiles to one) and {@link Registers#of} takes one value per
 * {@link Register}. So each enum of the baseline jars keeps its constants in order, new ones
 * only after them, and {@code Register} gains none (docs/plugin-authoring.md, "API
 * compatibility check").
 */
class ApiEnumsTest {
  static final Path BASELINES = Path.of("api-baseline");
  static final Path API_CLASSES = Path.of("target", "classes");

  @Test
  void baselineEnumsKeepTheirConstantsInOrder() throws Exception {
    List<String> checked = new ArrayList<>();
    for (String jar : List.of("plugin-api-2.0.jar", "plugin-kit-2.0.jar")) {
      Path baseline = BASELINES.resolve(jar);
      // The kit's baseline links against the API it was built with, which is still this one.
      URL[] path = jar.startsWith("plugin-kit")
          ? new URL[] {baseline.toUri().toURL(), API_CLASSES.toUri().toURL()}
          : new URL[] {baseline.toUri().toURL()};
      try (URLClassLoader old = new URLClassLoader(path, ClassLoader.getPlatformClassLoader())) {
        for (String name : classNames(baseline)) {
          Class<?> was = Class.forName(name, false, old);
          if (!was.isEnum() || !Modifier.isPublic(was.getModifiers())) {
            continue;
          }
          Class<?> now = Class.forName(name, false, ApiEnumsTest.class.getClassLoader());
          List<String> before = constants(was);
          List<String> after = constants(now);
          assertTrue(after.size() >= before.size()
              && after.subList(0, before.size()).equals(before),
              name + ": " + before + " became " + after + " (constants removed or reordered)");
          checked.add(name);
        }
      }
    }
    assertTrue(checked.contains(Register.class.getName()), checked.toString());
    assertTrue(checked.contains(Capability.class.getName()), checked.toString());
    assertEquals(17, Register.values().length,
        "Registers.of takes one value per Register: a new register breaks every plug-in");
  }

  private static List<String> constants(Class<?> type) {
    return Arrays.stream(type.getEnumConstants()).map(c -> ((Enum<?>) c).name()).toList();
  }

  private static List<String> classNames(Path jar) throws IOException {
    List<String> names = new ArrayList<>();
    try (JarFile file = new JarFile(jar.toFile())) {
      for (JarEntry e : Collections.list(file.entries())) {
        if (e.getName().endsWith(".class")) {
          names.add(e.getName().replace('/', '.').replaceAll("\\.class$", ""));
        }
      }
    }
    return names;
  }
}
