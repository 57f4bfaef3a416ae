package dev.polystack.host.cli;

import dev.polystack.host.inspect.ModuleReport;
import dev.polystack.plugin.api.CodeRange;
import dev.polystack.plugin.api.DiscoveredOffset;
import java.io.PrintWriter;
import java.util.List;
import java.util.Locale;
import java.util.stream.Collectors;

/** Renders inspection reports for people and for machines. */
final class InspectFormat {
  private InspectFormat() {}

  static void text(ModuleReport r, PrintWriter out) {
    out.println(TerminalText.escape(r.module())
        + (r.buildId().isEmpty() ? "  (no build id)" : "  build id " + r.buildId())
        + (r.bias() != 0 ? "  bias 0x" + Long.toHexString(r.bias()) : ""));
    if (r.findings().isEmpty()) {
      out.println("  no plug-in recognised this module");
    }
    for (ModuleReport.Finding f : r.findings()) {
      out.println("  " + TerminalText.escape(f.plugin()) + ": "
          + f.status().name().toLowerCase(Locale.ROOT) + ": " + TerminalText.escape(f.summary()));
      block(out, "evidence", f.evidence());
      block(out, "code ranges", f.codeRanges().stream()
          .map(c -> hex(c.start()) + "-" + hex(c.end()) + "  " + c.label()).toList());
      if (f.status() == ModuleReport.Status.SUPPORTED) {
        block(out, "offsets", f.offsets().isEmpty()
            ? List.of("none (this plug-in version discovers no offsets)")
            : f.offsets().stream().map(InspectFormat::offset).toList());
      }
    }
    out.println();
  }

  private static String offset(DiscoveredOffset o) {
    return o.name() + " = " + hex(o.value()) + "  [" + o.provenance().name()
        .toLowerCase(Locale.ROOT).replace('_', '-') + ": " + o.detail() + "]";
  }

  private static void block(PrintWriter out, String title, List<String> lines) {
    for (int i = 0; i < lines.size(); i++) {
      out.printf("    %-12s %s%n", i == 0 ? title : "", TerminalText.escape(lines.get(i)));
    }
  }

  static String json(ModuleReport r) {
    String findings = r.findings().stream().map(InspectFormat::json)
        .collect(Collectors.joining(",", "[", "]"));
    return "{\"module\":" + Json.quote(r.module())
        + ",\"build_id\":" + (r.buildId().isEmpty() ? "null" : Json.quote(r.buildId()))
        + ",\"bias\":" + r.bias()
        + ",\"findings\":" + findings + "}";
  }

  private static String json(ModuleReport.Finding f) {
    return "{\"plugin\":" + Json.quote(f.plugin())
        + ",\"status\":" + Json.quote(f.status().name().toLowerCase(Locale.ROOT))
        + ",\"summary\":" + Json.quote(f.summary())
        + ",\"evidence\":" + f.evidence().stream().map(Json::quote)
            .collect(Collectors.joining(",", "[", "]"))
        + ",\"code_ranges\":" + f.codeRanges().stream().map(InspectFormat::json)
            .collect(Collectors.joining(",", "[", "]"))
        + ",\"offsets\":" + f.offsets().stream().map(InspectFormat::json)
            .collect(Collectors.joining(",", "[", "]"))
        + "}";
  }

  private static String json(CodeRange c) {
    return "{\"start\":" + c.start() + ",\"end\":" + c.end() + ",\"label\":" + Json.quote(c.label())
        + "}";
  }

  private static String json(DiscoveredOffset o) {
    return "{\"name\":" + Json.quote(o.name()) + ",\"value\":" + o.value()
        + ",\"provenance\":" + Json.quote(o.provenance().name().toLowerCase(Locale.ROOT))
        + ",\"detail\":" + Json.quote(o.detail()) + "}";
  }

  private static String hex(long v) {
    return "0x" + Long.toHexString(v);
  }
}
