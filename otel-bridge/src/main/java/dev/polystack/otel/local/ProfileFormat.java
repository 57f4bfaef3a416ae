package dev.polystack.otel.local;

import dev.polystack.otel.otlp.OtlpFileWriter;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Collectors;

/** The local output formats, by the lower-case name users pass on the command line. */
public enum ProfileFormat {
  /** A self-contained interactive flame graph; the default because it needs only a browser. */
  HTML("html"),
  /** Gzipped pprof profile.proto, for {@code go tool pprof} and tools that read it. */
  PPROF("pb.gz"),
  /** Brendan Gregg's collapsed stacks, for flamegraph.pl and the many tools that read them. */
  FOLDED("folded"),
  /** The speedscope file format, for https://www.speedscope.app and its offline builds. */
  SPEEDSCOPE("speedscope.json"),
  /** A binary OTLP ExportProfilesServiceRequest, the bytes a Collector would receive. */
  OTLP("otlp.pb");

  /**
   * File name endings users give each format (py-spy, async-profiler, perf, Go and
   * flamegraph.pl habits: Go names CPU profiles {@code cpu.prof}), longest first so
   * {@code .speedscope.json} wins over {@code .json} and {@code .otlp.pb} over {@code .pb}.
   */
  private static final List<Map.Entry<String, ProfileFormat>> ENDINGS = List.of(
      Map.entry(".speedscope.json", SPEEDSCOPE),
      Map.entry(".otlp.pb", OTLP),
      Map.entry(".pb.gz", PPROF),
      Map.entry(".pprof", PPROF),
      Map.entry(".prof", PPROF),
      Map.entry(".pb", PPROF),
      Map.entry(".html", HTML),
      Map.entry(".htm", HTML),
      Map.entry(".folded", FOLDED),
      Map.entry(".collapsed", FOLDED),
      Map.entry(".txt", FOLDED),
      Map.entry(".json", SPEEDSCOPE));

  /** Endings of other tools' formats, which a file named so would be mistaken for. */
  private static final Map<String, String> FOREIGN = Map.of(
      ".jfr", "JFR (async-profiler's and the JDK's recording format)",
      ".svg", "SVG (flamegraph.pl's and py-spy's picture; polystack's flame graph is .html)");

  private final String extension;

  ProfileFormat(String extension) {
    this.extension = extension;
  }

  public ProfileWriter writer() {
    return writer(false);
  }

  /**
   * @param threadRoots folded output starts each stack with its thread as the root frame; the
   *     other formats keep threads apart anyway (html and speedscope by thread, pprof by label)
   */
  public ProfileWriter writer(boolean threadRoots) {
    return switch (this) {
      case HTML -> new HtmlFlameGraphWriter();
      case PPROF -> new PprofWriter();
      case FOLDED -> new FoldedWriter(threadRoots);
      case SPEEDSCOPE -> new SpeedscopeWriter();
      case OTLP -> new OtlpFileWriter(System.getenv());
    };
  }

  /** The file name extension, without the leading dot ({@code pb.gz} has one inside). */
  public String extension() {
    return extension;
  }

  /** The name users type: the constant in lower case. */
  public String cliName() {
    return name().toLowerCase(Locale.ROOT);
  }

  /**
   * The format a file name's ending stands for ({@code .html}; {@code .folded},
   * {@code .collapsed}, {@code .txt}; {@code .pb.gz}, {@code .pprof}, {@code .prof},
   * {@code .pb}; {@code .speedscope.json}, {@code .json}; {@code .otlp.pb}),
   * case-insensitive; empty for any other ending.
   *
   * @throws IllegalArgumentException for another tool's format ({@code .jfr}, {@code .svg}),
   *     naming the formats polystack writes
   */
  public static Optional<ProfileFormat> forFileName(String fileName) {
    String lower = fileName.toLowerCase(Locale.ROOT);
    for (Map.Entry<String, String> foreign : FOREIGN.entrySet()) {
      if (lower.endsWith(foreign.getKey())) {
        throw new IllegalArgumentException("a " + foreign.getKey() + " file is "
            + foreign.getValue() + ", not a format polystack writes; polystack writes "
            + knownEndings());
      }
    }
    for (Map.Entry<String, ProfileFormat> ending : ENDINGS) {
      if (lower.endsWith(ending.getKey()) && lower.length() > ending.getKey().length()) {
        return Optional.of(ending.getValue());
      }
    }
    return Optional.empty();
  }

  /** The endings of one format, for messages: {@code .folded, .collapsed or .txt}. */
  public String endings() {
    List<String> mine = ENDINGS.stream().filter(e -> e.getValue() == this)
        .map(Map.Entry::getKey).toList();
    if (mine.size() == 1) {
      return mine.get(0);
    }
    return String.join(", ", mine.subList(0, mine.size() - 1)) + " or " + mine.get(mine.size() - 1);
  }

  /** Every format with its endings: {@code html (.html, .htm), folded (...), ...}. */
  public static String knownEndings() {
    return Arrays.stream(values()).map(f -> f.cliName() + " (" + String.join(", ",
        ENDINGS.stream().filter(e -> e.getValue() == f).map(Map.Entry::getKey).toList()) + ")")
        .collect(Collectors.joining(", "));
  }

  /**
   * The format called {@code name} (lower case, as {@link #cliName()} gives it).
   *
   * @throws IllegalArgumentException naming the known formats, so a CLI can show it as it is
   */
  public static ProfileFormat parse(String name) {
    for (ProfileFormat format : values()) {
      if (format.cliName().equals(name)) {
        return format;
      }
    }
    throw new IllegalArgumentException("unknown output format '" + name + "', expected one of "
        + Arrays.stream(values()).map(ProfileFormat::cliName).collect(Collectors.joining(", ")));
  }
}
