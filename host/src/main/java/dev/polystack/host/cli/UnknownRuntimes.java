package dev.polystack.host.cli;

import dev.polystack.otel.model.ModuleInfo;
import dev.polystack.otel.model.Recording;
import java.util.Collection;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * Names a runtime a recording ran but no loaded plug-in knows (a Python interpreter when only
 * LuaJIT is loaded): its profile then shows the interpreter's own C functions, not the
 * program's, and the user should hear that once rather than wonder.
 */
final class UnknownRuntimes {

  /** A runtime: its name, the plug-in id word that would claim it, its binaries' names. */
  private record Runtime(String name, String pluginWord, Pattern binary) {}

  private static final List<Runtime> RUNTIMES = List.of(
      new Runtime("Python", "python", Pattern.compile("(lib)?python[0-9][.0-9]*[dm]?(\\.so.*)?")),
      new Runtime("Ruby", "ruby", Pattern.compile("(lib)?ruby[0-9.]*(\\.so.*)?")),
      new Runtime("Node.js", "node", Pattern.compile("node(js)?|libnode\\.so.*")),
      new Runtime("Java", "java", Pattern.compile("libjvm\\.so")),
      new Runtime("Perl", "perl", Pattern.compile("perl[0-9.]*|libperl\\.so.*")),
      new Runtime("PHP", "php", Pattern.compile("php[0-9.]*(-fpm[0-9.]*)?|libphp.*\\.so")),
      new Runtime("Erlang", "erlang", Pattern.compile("beam(\\.smp)?")));

  private UnknownRuntimes() {}

  /**
   * One line for the first runtime among the recording's executable and modules that none of
   * {@code pluginIds} claims, or empty.
   */
  static Optional<String> describe(Recording recording, Collection<String> pluginIds) {
    List<String> paths = Stream.concat(Stream.of(recording.target().executablePath()),
        recording.modules().stream().map(ModuleInfo::path)).toList();
    for (Runtime runtime : RUNTIMES) {
      boolean claimed = pluginIds.stream()
          .anyMatch(id -> id.toLowerCase(Locale.ROOT).contains(runtime.pluginWord()));
      if (claimed) {
        continue;
      }
      for (String path : paths) {
        String name = path.substring(path.lastIndexOf('/') + 1);
        if (runtime.binary().matcher(name).matches()) {
          return Optional.of(name + " is a " + runtime.name() + " runtime and no loaded"
              + " plug-in knows " + runtime.name() + ": the profile shows its C functions, not"
              + " the program's (polystack plugins lists the loaded ones; docs/plugin-authoring.md"
              + " says how to add one)");
        }
      }
    }
    return Optional.empty();
  }
}
