package dev.polystack.e2e;

import java.io.IOException;
import java.io.OutputStream;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.jar.JarEntry;
import java.util.jar.JarOutputStream;
import java.util.stream.Stream;
import javax.tools.JavaCompiler;
import javax.tools.JavaFileObject;
import javax.tools.SimpleJavaFileObject;
import javax.tools.ToolProvider;

/**
 * Builds real plug-in jars for tests: compiles Java sources against plugin-api with the JDK's
 * compiler and packs them with their ServiceLoader registration, as a third party would.
 */
final class PluginJars {
  private PluginJars() {}

  /**
   * @param sources fully qualified class name -> source
   * @param providers the classes to register as {@code dev.polystack.plugin.api.Plugin}
   */
  static Path build(Path jar, Map<String, String> sources, List<String> providers)
      throws IOException {
    JavaCompiler compiler = ToolProvider.getSystemJavaCompiler();
    if (compiler == null) {
      throw new IllegalStateException("no Java compiler: tests need a JDK, not a JRE");
    }
    Path classes = Files.createTempDirectory("plugin-classes");
    List<JavaFileObject> units = new ArrayList<>();
    sources.forEach((name, code) -> units.add(new Source(name, code)));
    List<String> options = List.of("-d", classes.toString(), "--release", "17",
        "-classpath", System.getProperty("java.class.path"));
    var diagnostics = new java.io.StringWriter();
    if (!compiler.getTask(diagnostics, null, null, options, null, units).call()) {
      throw new IllegalStateException("test plug-in does not compile:\n" + diagnostics);
    }
    try (OutputStream file = Files.newOutputStream(jar);
        JarOutputStream out = new JarOutputStream(file);
        Stream<Path> walk = Files.walk(classes)) {
      for (Path p : walk.filter(Files::isRegularFile).sorted().toList()) {
        out.putNextEntry(new JarEntry(classes.relativize(p).toString().replace('\\', '/')));
        out.write(Files.readAllBytes(p));
        out.closeEntry();
      }
      out.putNextEntry(new JarEntry("META-INF/services/dev.polystack.plugin.api.Plugin"));
      out.write((String.join("\n", providers) + "\n").getBytes(StandardCharsets.UTF_8));
      out.closeEntry();
    }
    installSafely(jar);
    return jar;
  }

  /**
   * As an administrator installs a plug-in: 0644 and its directory 0755 (root-owned when the
   * tests run as root), whatever the umask; polystack as root refuses anything others can
   * change (docs/plugin-authoring.md).
   */
  static void installSafely(Path jar) throws IOException {
    Files.setPosixFilePermissions(jar, PosixFilePermissions.fromString("rw-r--r--"));
    Files.setPosixFilePermissions(jar.getParent(), PosixFilePermissions.fromString("rwxr-xr-x"));
  }

  /** The line polystack prints as root when code from these --plugin-path jars ran. */
  static String privilegeWarning(Path... jars) {
    return "polystack: warning: third-party plug-in code from " + String.join(", ",
        java.util.Arrays.stream(jars).map(Path::toString).toList()) + " ran inside polystack,"
        + " which runs as root: it can do anything polystack can; load only plug-ins you trust";
  }

  /** Source of a minimal runtime plug-in with the given id and API version. */
  static String runtimePlugin(String className, String id, String apiVersion, String inspectBody) {
    return """
        package example;

        import dev.polystack.plugin.api.*;
        import java.util.Set;

        public final class %s implements RuntimePlugin {
          @Override
          public PluginDescriptor descriptor() {
            return new PluginDescriptor("%s", "9.9.9", ApiVersion.parse("%s"), "%s",
                Set.of(Capability.DETECT), "test plug-in %s");
          }

          @Override
          public Inspection inspect(ModuleImage image) {
            %s
          }
        }
        """.formatted(className, id, apiVersion, id, id, inspectBody);
  }

  private static final class Source extends SimpleJavaFileObject {
    private final String code;

    Source(String className, String code) {
      super(URI.create("string:///" + className.replace('.', '/') + Kind.SOURCE.extension),
          Kind.SOURCE);
      this.code = code;
    }

    @Override
    public CharSequence getCharContent(boolean ignoreEncodingErrors) {
      return code;
    }
  }
}
