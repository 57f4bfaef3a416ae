package dev.polystack.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.stream.Stream;

/**
 * The CPython example plug-in of docs/examples/cpython-plugin, built as its author builds it
 * (its own Maven project against the installed plugin-api), and the Pythons it is tried on.
 */
final class CPythonExample {
  /** The copied project, and the --plugin-path directory holding its jar. */
  record Built(Path project, Path pluginDir) {}

  private CPythonExample() {}

  /** Copies the example under {@code dir}, packages it offline and installs its jar. */
  static Built build(Path dir) throws Exception {
    Path example = Distribution.root().resolve("docs/examples/cpython-plugin");
    Path project = dir.resolve("cpython-plugin");
    copyTree(example.resolve("src"), project.resolve("src"));
    Files.copy(example.resolve("pom.xml"), project.resolve("pom.xml"));
    var mvn = Tools.run(300, null, List.of("mvn", "-B", "-o", "-q", "-f",
        project.resolve("pom.xml").toString(), "package"));
    assertEquals(0, mvn.exitCode(), "the CPython example does not build against the installed"
        + " plugin-api and its author kit (mvn -B -pl plugin-api -am install):\n" + mvn.stdout()
        + mvn.stderr());
    Path pluginDir = Files.createDirectories(dir.resolve("plugins"));
    Path jar = pluginDir.resolve("cpython-plugin.jar");
    Files.copy(project.resolve("target/cpython-plugin-0.1.0.jar"), jar);
    PluginJars.installSafely(jar);
    return new Built(project, pluginDir);
  }

  /** pyenv's {@code executable} of the first version starting with {@code versionPrefix}. */
  static Optional<Path> pyenv(String versionPrefix, String executable) throws IOException {
    Path versions = Path.of("/root/.pyenv/versions");
    if (!Files.isDirectory(versions)) {
      return Optional.empty();
    }
    try (Stream<Path> list = Files.list(versions)) {
      return list.filter(p -> p.getFileName().toString().startsWith(versionPrefix))
          .map(p -> p.resolve("bin").resolve(executable)).filter(Files::isExecutable)
          .sorted().findFirst();
    }
  }

  private static void copyTree(Path from, Path to) throws IOException {
    List<Path> files = new ArrayList<>();
    try (Stream<Path> walk = Files.walk(from)) {
      walk.filter(Files::isRegularFile).forEach(files::add);
    }
    for (Path p : files) {
      Path target = to.resolve(from.relativize(p).toString());
      Files.createDirectories(target.getParent());
      Files.copy(p, target, StandardCopyOption.REPLACE_EXISTING);
    }
  }
}
