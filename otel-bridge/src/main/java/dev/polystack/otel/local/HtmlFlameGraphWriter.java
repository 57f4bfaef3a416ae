package dev.polystack.otel.local;

import dev.polystack.otel.counters.CounterKind;
import dev.polystack.otel.counters.Counters;
import dev.polystack.otel.counters.SamplingRates;
import dev.polystack.otel.model.Recording;
import dev.polystack.otel.model.Sample;
import dev.polystack.otel.model.StackTrace;
import dev.polystack.plugin.api.Frame;
import java.io.BufferedWriter;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.OutputStreamWriter;
import java.io.StringReader;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * One self-contained HTML file with an interactive flame graph (d3-flame-graph on d3 v7, both
 * inlined), so a profile can be mailed, archived or opened on a machine without network.
 *
 * <p>The tree is process, then thread, then frames root first: threads of one process often run
 * unrelated work, and merging them would hide which thread a hot path belongs to.
 */
final class HtmlFlameGraphWriter implements ProfileWriter {
  static final String VENDOR = "vendor/d3-flame-graph-4.1.3/";
  private static final String TEMPLATE = "flamegraph.html";
  private static final String D3_POM = "META-INF/maven/org.webjars.npm/d3/pom.properties";
  private static final Pattern PLACEHOLDER = Pattern.compile("\\{\\{([A-Z0-9_]+)}}");
  private static final Pattern END_TAG =
      Pattern.compile("</(script|style)", Pattern.CASE_INSENSITIVE);

  @Override
  public void write(Recording recording, OutputStream out) throws IOException {
    Map<String, String> parts = Map.of(
        "TITLE", html(title(recording)),
        "EXPORTER", html(Stacks.exporter()),
        "FACTS", facts(recording),
        "DATA", tree(recording).toJson(),
        "TYPES", types(recording),
        "FLAMEGRAPH_CSS", inline(resource(VENDOR + "d3-flamegraph.css")),
        "D3_JS", inline(d3()),
        "FLAMEGRAPH_JS", inline(resource(VENDOR + "d3-flamegraph.min.js")),
        "TOOLTIP_JS", inline(resource(VENDOR + "d3-flamegraph-tooltip.min.js")));

    String template = resource(TEMPLATE);
    Writer w = new BufferedWriter(new OutputStreamWriter(out, StandardCharsets.UTF_8), 64 * 1024);
    // One pass over the template, so text we insert is never searched for placeholders.
    Matcher m = PLACEHOLDER.matcher(template);
    int last = 0;
    while (m.find()) {
      String part = parts.get(m.group(1));
      if (part == null) {
        throw new IllegalStateException("unknown placeholder in " + TEMPLATE + ": " + m.group());
      }
      w.write(template, last, m.start() - last);
      w.write(part);
      last = m.end();
    }
    w.write(template, last, template.length() - last);
    w.flush();
  }

  private static String title(Recording r) {
    return "polystack: " + r.target().executableName() + " (pid " + r.target().pid() + ")";
  }

  private static String facts(Recording r) {
    StringBuilder sb = new StringBuilder();
    fact(sb, "command", String.join(" ", r.target().commandLine()));
    Instant start = Instant.ofEpochSecond(0, r.startEpochNanos());
    Instant end = Instant.ofEpochSecond(0, r.endEpochNanos());
    Duration length = Duration.between(start, end);
    fact(sb, "time", start + " to " + end + String.format(Locale.ROOT, " (%.3f s)",
        length.toNanos() / 1e9));
    int threads = Stacks.threadNames(r).size();
    fact(sb, r.sampleTypes().isEmpty() ? "samples" : "stacks",
        Sample.count(r.samples()) + " from " + threads
        + (threads == 1 ? " thread" : " threads"));
    if (r.sampleTypes().isEmpty()) {
      fact(sb, "rate", SamplingRates.of(r.periodNanos(), r.losses(),
          Sample.count(r.samples()), threads, length.toNanos()).describe()
          + String.format(Locale.ROOT, " (a thread every %.3f ms)", r.periodNanos() / 1e6));
    } else {
      // An allocation recording's period is bytes between samples (1: every call).
      fact(sb, "sampling", r.periodNanos() == 1 ? "every call"
          : r.periodType().equals(dev.polystack.otel.model.ValueType.CALLS)
          ? "one stack per " + r.periodNanos() + " calls, on average"
          : "one sample per " + r.periodNanos() + " bytes allocated, on average");
    }
    fact(sb, "mode", r.mode());
    var counters = Counters.byKind(r.losses());
    String lost = join(counters.getOrDefault(CounterKind.LOSS, Map.of()));
    fact(sb, "lost", lost.isEmpty() ? "nothing" : lost);
    String capture = join(Stacks.captureFigures(r));
    if (!capture.isEmpty()) {
      fact(sb, "tick capture", capture);
    }
    return sb.toString();
  }

  private static String join(Map<String, Long> counts) {
    StringBuilder sb = new StringBuilder();
    counts.forEach((name, n) ->
        sb.append(sb.length() == 0 ? "" : ", ").append(name).append(": ").append(n));
    return sb.toString();
  }

  private static void fact(StringBuilder sb, String name, String value) {
    sb.append("<dt>").append(html(name)).append("</dt><dd>").append(html(value)).append("</dd>\n");
  }

  /**
   * The sample types the page can switch between, as JSON ({@code {"types": [{"type", "unit"}],
   * "dflt": index}}), or {@code null} for CPU samples, which have one value.
   */
  static String types(Recording r) {
    if (r.sampleTypes().isEmpty()) {
      return "null";
    }
    StringBuilder sb = new StringBuilder("{\"types\":[");
    for (int i = 0; i < r.sampleTypes().size(); i++) {
      Json.string(sb.append(i == 0 ? "{\"type\":" : ",{\"type\":"),
          r.sampleTypes().get(i).type());
      Json.string(sb.append(",\"unit\":"), r.sampleTypes().get(i).unit()).append('}');
    }
    return sb.append("],\"dflt\":").append(r.defaultType()).append('}').toString();
  }

  /**
   * One node of the flame graph: inclusive value and children by label; with several sample
   * types, the inclusive value of each ({@code vs}), so the page can switch between them.
   */
  private static final class Node {
    final String name;
    final String type;
    long value;
    long[] values;
    final Map<String, Node> children = new LinkedHashMap<>();

    Node(String name, String type) {
      this.name = name;
      this.type = type;
    }

    Node child(String name, String type) {
      return children.computeIfAbsent(name, n -> new Node(n, type));
    }

    /** Adds one stack's (or thread's) values: all types, the default one as {@code value}. */
    void add(long[] typed, int defaultType) {
      if (typed.length == 1) {
        value += typed[0];
        return;
      }
      if (values == null) {
        values = new long[typed.length];
      }
      for (int i = 0; i < typed.length; i++) {
        values[i] += typed[i];
      }
      value += typed[defaultType];
    }

    String toJson() {
      StringBuilder sb = new StringBuilder();
      appendJson(sb);
      return sb.toString();
    }

    /**
     * d3-flame-graph's short keys (n name, v value, c children; t is our frame type): a page
     * holds one object per distinct call path, and long keys would be a third of its size.
     */
    private void appendJson(StringBuilder sb) {
      Json.string(sb.append("{\"n\":"), name);
      Json.string(sb.append(",\"t\":"), type);
      sb.append(",\"v\":").append(value);
      if (values != null) {
        sb.append(",\"vs\":[");
        for (int i = 0; i < values.length; i++) {
          sb.append(i == 0 ? "" : ",").append(values[i]);
        }
        sb.append(']');
      }
      if (!children.isEmpty()) {
        sb.append(",\"c\":[");
        boolean first = true;
        for (Node child : children.values()) {
          if (!first) {
            sb.append(',');
          }
          child.appendJson(sb);
          first = false;
        }
        sb.append(']');
      }
      sb.append('}');
    }
  }

  /**
   * Process, thread, then the frames of each sample root first, with inclusive counts. A
   * recording of several processes has them under one root, each with its threads.
   */
  private static Node tree(Recording recording) {
    Stacks stacks = new Stacks(recording);
    Map<Integer, List<Sample>> byThread = new TreeMap<>();
    Map<Integer, String> processOf = new TreeMap<>();
    for (Sample sample : recording.samples()) {
      byThread.computeIfAbsent(sample.tid(), t -> new ArrayList<>()).add(sample);
      processOf.put(sample.tid(), Stacks.processLabel(sample));
    }
    Map<Integer, String> threadNames = Stacks.threadNames(recording);
    boolean several = Stacks.namesProcesses(recording);
    Node root = several
        ? new Node(new java.util.HashSet<>(processOf.values()).size() + " processes", "root")
        : new Node(recording.target().executableName() + " (pid " + recording.target().pid()
            + ")", "root");
    int dflt = recording.defaultType();
    byThread.forEach((tid, samples) -> {
      Node parent = root;
      if (several) {
        parent = root.child(processOf.get(tid), "process");
      }
      Node thread = parent.child(Stacks.threadLabel(tid, threadNames.get(tid)), "thread");
      // Walk each distinct stack once with its values rather than once per sample.
      for (Map.Entry<StackTrace, long[]> e : Stacks.valuesByStack(recording, samples)) {
        root.add(e.getValue(), dflt);
        if (parent != root) {
          parent.add(e.getValue(), dflt);
        }
        thread.add(e.getValue(), dflt);
        List<String> labels = stacks.rootFirstLabels(e.getKey());
        List<String> kinds = kinds(e.getKey());
        Node node = thread;
        for (int i = 0; i < labels.size(); i++) {
          node = node.child(labels.get(i), kinds.get(i));
          node.add(e.getValue(), dflt);
        }
      }
    });
    return root;
  }

  /** Frame types root first, lined up with {@link Stacks#rootFirstLabels}. */
  private static List<String> kinds(StackTrace stack) {
    if (stack.frames().isEmpty()) {
      return List.of(Frame.ERROR);
    }
    List<String> kinds = new ArrayList<>(stack.frames().size());
    for (int i = stack.frames().size() - 1; i >= 0; i--) {
      kinds.add(stack.frames().get(i).type());
    }
    return kinds;
  }

  /** d3 from its webjar, whichever version the build put on the classpath. */
  private static String d3() throws IOException {
    Properties pom = new Properties();
    pom.load(new StringReader(classpath(D3_POM)));
    return classpath("META-INF/resources/webjars/d3/" + pom.getProperty("version")
        + "/dist/d3.min.js");
  }

  private static String resource(String name) throws IOException {
    return classpath(HtmlFlameGraphWriter.class.getPackageName().replace('.', '/') + "/" + name);
  }

  private static String classpath(String path) throws IOException {
    try (InputStream in = HtmlFlameGraphWriter.class.getClassLoader().getResourceAsStream(path)) {
      if (in == null) {
        // d3 comes from the org.webjars.npm:d3 jar, the rest from this module's jar.
        throw new IllegalStateException("missing resource " + path + ": broken polystack build");
      }
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
  }

  /**
   * Script and style text must not contain their own end tag, or the browser would end the
   * element there. The vendored files have none today; this keeps it so after an update. In
   * JavaScript strings and regular expressions {@code <\/} means the same as {@code </}.
   */
  static String inline(String code) {
    return END_TAG.matcher(code).replaceAll("<\\\\/$1");
  }

  static String html(String text) {
    StringBuilder sb = new StringBuilder(text.length());
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      switch (c) {
        case '<' -> sb.append("&lt;");
        case '>' -> sb.append("&gt;");
        case '&' -> sb.append("&amp;");
        case '"' -> sb.append("&quot;");
        case '\'' -> sb.append("&#39;");
        default -> sb.append(c);
      }
    }
    return sb.toString();
  }
}
