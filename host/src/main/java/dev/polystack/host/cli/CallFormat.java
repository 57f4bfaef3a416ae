package dev.polystack.host.cli;

import dev.polystack.host.probes.CallStatistics;
import dev.polystack.host.probes.LatencyStats;
import dev.polystack.host.probes.ResolvedPlan;
import dev.polystack.host.probes.TraceSession;
import dev.polystack.plugin.api.CallRecord;
import java.io.IOException;
import java.io.Writer;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Writes a vDSO session: one line per emitted call and the statistics, either for people (a
 * table like {@code ltrace -c} plus a latency histogram) or as JSON lines for machines. Every
 * JSON line carries the schema revision and the session id, so --append files keep sessions
 * apart; addresses and raw register values are hexadecimal strings.
 */
final class CallFormat implements TraceSession.Sink {
  static final int SCHEMA = 1;

  private final Writer out;
  private final boolean json;
  private final boolean summaryOnly;
  private final String session;
  private final java.util.function.Consumer<String> warn;
  private final boolean functionsNamed;

  /**
   * @param functionsNamed the user named the functions: each one left out gets its own warning;
   *     otherwise the defaults left out share one line
   */
  CallFormat(Writer out, boolean json, boolean summaryOnly, String session,
      java.util.function.Consumer<String> warn, boolean functionsNamed) {
    this.warn = warn;
    this.functionsNamed = functionsNamed;
    this.out = out;
    this.json = json;
    this.summaryOnly = summaryOnly;
    this.session = session;
  }

  @Override
  public void plan(ResolvedPlan plan) throws IOException {
    List<String> omitted = plan.plan().omitted();
    if (functionsNamed) {
      for (String o : omitted) {
        warn.accept("not traced: " + o);
      }
    } else if (!omitted.isEmpty()) {
      // Nobody asked for these: one line, not one per default that did not fit.
      boolean slots = omitted.stream().allMatch(o -> o.contains("slot"));
      warn.accept("not traced (" + (slots ? "no breakpoint slot left for them"
          : "no breakpoint slot left, or not traceable with this backend") + "): "
          + names(omitted) + "; name the functions you want with --functions");
    }
    // Nothing for JSON: the summary lines say what was traced; people get a header.
    if (!json && !summaryOnly) {
      out.write("# session " + session + ": tracing " + plan.entries().values().stream()
          .map(s -> s.function() + "@" + s.version()).toList() + " in process " + plan.pid()
          + "\n");
      out.flush();
    }
  }

  @Override
  public void call(long seq, CallRecord r, long realtimeNanos) throws IOException {
    if (summaryOnly) {
      return;
    }
    out.write(json ? jsonCall(seq, r, realtimeNanos) : TerminalText.escape(textCall(seq, r)));
    out.write('\n');
  }

  @Override
  public void flush() throws IOException {
    out.flush();
  }

  String jsonCall(long seq, CallRecord r, long realtimeNanos) {
    StringBuilder sb = new StringBuilder(256);
    sb.append("{\"type\":\"call\"");
    head(sb);
    sb.append(",\"seq\":").append(seq)
        .append(",\"pid\":").append(r.pid())
        .append(",\"tid\":").append(r.tid())
        .append(",\"function\":").append(Json.quote(r.function()))
        .append(",\"version\":").append(Json.quote(r.version()))
        .append(",\"args\":");
    value(sb, r.arguments());
    sb.append(",\"rax\":").append(Json.quote(hex(r.returnRegister())))
        .append(",\"result\":").append(r.result())
        .append(",\"errno\":");
    value(sb, r.errorName());
    sb.append(",\"outputs\":");
    value(sb, r.outputs());
    sb.append(",\"return_address\":").append(Json.quote(hex(r.returnAddress())))
        .append(",\"entry_rsp\":").append(Json.quote(hex(r.entryStackPointer())))
        .append(",\"duration_ns\":").append(r.durationNanos())
        .append(",\"realtime_ns\":").append(realtimeNanos)
        .append('}');
    return sb.toString();
  }

  static String textCall(long seq, CallRecord r) {
    StringBuilder sb = new StringBuilder(160);
    sb.append('[').append(r.tid()).append("] ").append(r.function()).append('(');
    Iterator<Object> args = r.arguments().values().iterator();
    while (args.hasNext()) {
      sb.append(args.next());
      if (args.hasNext()) {
        sb.append(", ");
      }
    }
    sb.append(") = ").append(r.result());
    if (r.errorName() != null) {
      sb.append(' ').append(r.errorName());
    }
    if (r.outputs() == null) {
      sb.append(" {not captured}");
    } else if (!r.outputs().isEmpty()) {
      sb.append(' ').append(r.outputs());
    }
    sb.append(String.format(Locale.ROOT, " <%.1f us> #%d", r.durationNanos() / 1000.0, seq));
    return sb.toString();
  }

  private void head(StringBuilder sb) {
    sb.append(",\"schema\":").append(SCHEMA).append(",\"session\":").append(Json.quote(session));
  }

  /** The function names of "NAME: reason" entries. */
  static String names(List<String> omitted) {
    return String.join(", ", omitted.stream()
        .map(o -> o.indexOf(':') > 0 ? o.substring(0, o.indexOf(':')) : o).toList());
  }

  static String hex(long v) {
    return "0x" + Long.toHexString(v);
  }

  static void value(StringBuilder sb, Object v) {
    if (v == null) {
      sb.append("null");
    } else if (v instanceof Map<?, ?> m) {
      sb.append('{');
      boolean first = true;
      for (Map.Entry<?, ?> e : m.entrySet()) {
        sb.append(first ? "" : ",").append(Json.quote(String.valueOf(e.getKey()))).append(':');
        value(sb, e.getValue());
        first = false;
      }
      sb.append('}');
    } else if (v instanceof List<?> l) {
      sb.append('[');
      for (int i = 0; i < l.size(); i++) {
        sb.append(i > 0 ? "," : "");
        value(sb, l.get(i));
      }
      sb.append(']');
    } else if (v instanceof Number || v instanceof Boolean) {
      sb.append(v);
    } else {
      sb.append(Json.quote(String.valueOf(v)));
    }
  }

  /** The statistics: JSON summary lines, or the text table and histogram. */
  void summary(TraceSession.Result result, Map<String, Object> extra) throws IOException {
    CallStatistics s = result.stats();
    if (json) {
      for (Map.Entry<CallStatistics.ThreadKey, LatencyStats> e : s.threads().entrySet()) {
        StringBuilder sb = new StringBuilder("{\"type\":\"thread_summary\"");
        head(sb);
        sb.append(",\"pid\":").append(e.getKey().pid()).append(",\"tid\":")
            .append(e.getKey().tid());
        stats(sb, e.getValue());
        out.write(sb.append("}\n").toString());
      }
      StringBuilder sb = new StringBuilder("{\"type\":\"session_summary\"");
      head(sb);
      stats(sb, s.session());
      sb.append(",\"functions\":{");
      boolean first = true;
      for (Map.Entry<String, LatencyStats> e : s.functions().entrySet()) {
        sb.append(first ? "" : ",").append(Json.quote(e.getKey())).append(":{\"calls\":")
            .append(e.getValue().calls()).append(",\"errors\":")
            .append(e.getValue().errorCount()).append('}');
        first = false;
      }
      sb.append('}');
      sb.append(",\"threads\":").append(s.threads().size());
      if (s.session().calls() > 0) {
        sb.append(",\"tracer_cost_ns\":").append(s.session().minNanos());
      }
      for (Map.Entry<String, Object> e : extra.entrySet()) {
        sb.append(',').append(Json.quote(e.getKey())).append(':');
        value(sb, e.getValue());
      }
      out.write(sb.append("}\n").toString());
    } else {
      out.write(table(s));
      out.write(histogram(s.session()));
      out.write(tracerCost(s));
      for (Map.Entry<String, Object> e : extra.entrySet()) {
        if (e.getKey().equals("omitted") && e.getValue() instanceof List<?> l) {
          if (!l.isEmpty()) {
            out.write("not traced: " + names(l.stream().map(String::valueOf).toList()) + "\n");
          }
          continue;
        }
        out.write(e.getKey() + ": " + e.getValue() + "\n");
      }
    }
    out.flush();
  }

  private static void stats(StringBuilder sb, LatencyStats st) {
    sb.append(",\"calls\":").append(st.calls())
        .append(",\"errors\":").append(st.errorCount())
        .append(",\"errors_by_errno\":");
    value(sb, st.errors());
    sb.append(",\"emitted\":").append(st.emittedCount())
        .append(",\"min_ns\":").append(st.minNanos())
        .append(",\"avg_ns\":").append(st.avgNanos())
        .append(",\"max_ns\":").append(st.maxNanos())
        .append(",\"p50_ns_le\":").append(st.quantileUpperBound(0.50))
        .append(",\"p95_ns_le\":").append(st.quantileUpperBound(0.95))
        .append(",\"p99_ns_le\":").append(st.quantileUpperBound(0.99))
        .append(",\"buckets\":{");
    CallFormat.appendBuckets(sb, st.buckets());
  }

  static String table(CallStatistics s) {
    StringBuilder sb = new StringBuilder();
    long total = Math.max(1, s.session().totalNanos());
    sb.append("% time     seconds  usecs/call     calls    errors function\n");
    sb.append("------ ----------- ----------- --------- --------- --------------------\n");
    s.functions().entrySet().stream()
        .sorted((a, b) -> Long.compare(b.getValue().totalNanos(), a.getValue().totalNanos()))
        .forEach(e -> sb.append(row(e.getKey(), e.getValue(), total)));
    sb.append("------ ----------- ----------- --------- --------- --------------------\n");
    sb.append(row("total", s.session(), total));
    sb.append("\n  pid     tid     calls    errors   emitted    min us    avg us    max us\n");
    for (Map.Entry<CallStatistics.ThreadKey, LatencyStats> e : s.threads().entrySet()) {
      LatencyStats t = e.getValue();
      sb.append(String.format(Locale.ROOT, "%5d %7d %9d %9d %9d %9.1f %9.1f %9.1f%n",
          e.getKey().pid(), e.getKey().tid(), t.calls(), t.errorCount(), t.emittedCount(),
          t.minNanos() / 1e3, t.avgNanos() / 1e3, t.maxNanos() / 1e3));
    }
    if (!s.session().errors().isEmpty()) {
      sb.append("errors: ").append(s.session().errors()).append('\n');
    }
    return sb.toString();
  }

  private static String row(String name, LatencyStats st, long total) {
    return String.format(Locale.ROOT, "%6.2f %11.6f %11.1f %9d %9s %s%n",
        100.0 * st.totalNanos() / total, st.totalNanos() / 1e9, st.avgNanos() / 1e3,
        st.calls(), st.errorCount() == 0 ? "" : Long.toString(st.errorCount()), name);
  }

  /**
   * Every measured duration includes the tracer's own traps between the entry and the return; the
   * fastest traced call bounds that cost from above (the vDSO functions themselves take tens of
   * nanoseconds untraced), so it is printed beside the durations (docs/vdso.md, "Durations").
   */
  static String tracerCost(CallStatistics s) {
    if (s.session().calls() == 0) {
      return "";
    }
    return String.format(Locale.ROOT, "tracer cost: each duration above includes about %.1f us"
        + " of the tracer's own traps (the fastest traced call); untraced, these calls take"
        + " tens of nanoseconds%n", s.session().minNanos() / 1e3);
  }

  static String histogram(LatencyStats st) {
    StringBuilder sb = new StringBuilder("\nlatency (ns)                 : count     distribution\n");
    long[] b = st.buckets();
    long peak = 1;
    int lo = -1;
    int hi = -1;
    for (int i = 0; i < b.length; i++) {
      if (b[i] > 0) {
        peak = Math.max(peak, b[i]);
        lo = lo < 0 ? i : lo;
        hi = i;
      }
    }
    for (int i = Math.max(0, lo); lo >= 0 && i <= hi; i++) {
      long from = i == 0 ? 0 : 1L << i;
      long to = i >= 62 ? Long.MAX_VALUE : (1L << (i + 1)) - 1;
      int bar = (int) (40 * b[i] / peak);
      sb.append(String.format(Locale.ROOT, "%12d -> %-12d : %-9d |%-40s|%n", from, to, b[i],
          "*".repeat(bar)));
    }
    sb.append(String.format(Locale.ROOT, "p50 <= %d ns, p95 <= %d ns, p99 <= %d ns (max %d ns)%n",
        st.quantileUpperBound(0.5), st.quantileUpperBound(0.95), st.quantileUpperBound(0.99),
        st.maxNanos()));
    return sb.toString();
  }

  /** The non-empty log2 buckets as a JSON object's members, {@code "i":count}, then its close. */
  static void appendBuckets(StringBuilder sb, long[] buckets) {
    boolean first = true;
    for (int i = 0; i < buckets.length; i++) {
      if (buckets[i] != 0) {
        sb.append(first ? "" : ",").append('"').append(i).append("\":").append(buckets[i]);
        first = false;
      }
    }
    sb.append('}');
  }
}
