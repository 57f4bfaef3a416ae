package example.cpython;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * src/test/python/spinners.py, the program the cases are recorded from, read as text: the lines
 * of each function by its qualified name, so frames are checked against the program itself and
 * not against what the plug-in printed.
 */
final class Workload {
  static final Path SOURCE = Path.of("src/test/python/spinners.py");
  static final String FILE_NAME = "spinners.py";

  private static final Pattern DEF = Pattern.compile("^(\\s*)def (\\w+)\\(");
  private static final Pattern CLASS = Pattern.compile("^class (\\w+)");

  /** First and last line of one function, 1-based. */
  record Lines(int first, int last) {
    boolean contains(int line) {
      return line >= first && line <= last;
    }
  }

  private final Map<String, Lines> functions;
  private final int lines;

  private Workload(Map<String, Lines> functions, int lines) {
    this.functions = Map.copyOf(functions);
    this.lines = lines;
  }

  /** Reads the program; Maven runs tests in the project's directory. */
  static Workload read() throws IOException {
    List<String> text = Files.readAllLines(SOURCE);
    Map<String, Lines> out = new HashMap<>();
    String currentClass = null;
    for (int i = 0; i < text.size(); i++) {
      Matcher cls = CLASS.matcher(text.get(i));
      Matcher def = DEF.matcher(text.get(i));
      if (cls.find()) {
        currentClass = cls.group(1);
      } else if (def.find()) {
        int indent = def.group(1).length();
        String name = indent == 0 ? def.group(2) : currentClass + "." + def.group(2);
        int last = i;
        for (int j = i + 1; j < text.size(); j++) {
          String line = text.get(j);
          if (!line.isBlank() && indentOf(line) <= indent) {
            break;
          }
          if (!line.isBlank()) {
            last = j;
          }
        }
        out.put(name, new Lines(i + 1, last + 1));
      }
    }
    return new Workload(out, text.size());
  }

  private static int indentOf(String line) {
    int n = 0;
    while (n < line.length() && line.charAt(n) == ' ') {
      n++;
    }
    return n;
  }

  /** The lines of function {@code qualname}; {@code <module>} spans the file. */
  Lines lines(String qualname) {
    if (qualname.equals("<module>")) {
      return new Lines(1, lines);
    }
    Lines l = functions.get(qualname);
    if (l == null) {
      throw new AssertionError(SOURCE + " defines no " + qualname + ": " + functions.keySet());
    }
    return l;
  }
}
