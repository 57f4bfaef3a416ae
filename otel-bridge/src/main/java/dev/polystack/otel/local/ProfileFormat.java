package dev.polystack.otel.local;

import dev.polystack.otel.otlp.OtlpFileWriter;
import java.util.Arrays;
import java.util.Locale;
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

  private final String extension;

  ProfileFormat(String extension) {
    this.extension = extension;
  }

  public ProfileWriter writer() {
    return switch (this) {
      case HTML -> new HtmlFlameGraphWriter();
      case PPROF -> new PprofWriter();
      case FOLDED -> new FoldedWriter();
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
