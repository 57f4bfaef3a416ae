package dev.polystack.host.cli;

import dev.polystack.host.bpf.ProbeMonitor;
import dev.polystack.host.monitor.ProbeSession;
import dev.polystack.host.monitor.ProbeSite;
import dev.polystack.host.monitor.SiteDecoders;
import dev.polystack.host.probes.LatencyStats;
import dev.polystack.plugin.api.DecodedArgument;
import dev.polystack.plugin.api.DecodedReturn;
import java.io.IOException;
import java.io.Writer;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Writes a probe run: args hits as they come (decoded by a plug-in where one decodes the site,
 * with the raw registers beside in JSON), then per site the calls (and for latency the
 * quantiles and the histogram, as {@code vdso} prints it), per thread with --per-thread, and the
 * kernel's counters; as text for people or JSON lines for machines (each with the schema
 * revision and the run's session id).
 */
final class ProbeFormat implements ProbeSession.Sink {
  static final int SCHEMA = 1;
  private static final String[] REGS = {"rdi", "rsi", "rdx", "rcx", "r8", "r9"};

  private final Writer out;
  private final boolean json;
  private final String session;
  private final ProbeMonitor.Kind kind;
  private SiteDecoders decoders;

  ProbeFormat(Writer out, boolean json, String session, ProbeMonitor.Kind kind) {
    this.out = out;
    this.json = json;
    this.session = session;
    this.kind = kind;
  }

  @Override
  public void decoders(SiteDecoders d) {
    decoders = d;
  }

  /** The plug-in that decodes {@code s}'s records, or null. */
  private String decoder(ProbeSite s) {
    return decoders == null ? null : decoders.decoderOf(s);
  }

  @Override
  public void started(int pid, List<ProbeSite> sites) throws IOException {
    if (json) {
      for (ProbeSite s : sites) {
        String decoder = decoder(s);
        out.write("{\"type\":\"site\"" + head() + ",\"pid\":" + pid + ",\"site\":"
            + Json.quote(s.name()) + ",\"module\":" + Json.quote(s.module()) + ",\"address\":"
            + Json.quote(CallFormat.hex(s.address())) + ",\"file_offset\":"
            + Json.quote(CallFormat.hex(s.fileOffset())) + returns(s)
            + (decoder == null ? "" : ",\"decoder\":" + Json.quote(decoder)) + "}\n");
      }
    } else {
      out.write("# session " + session + ": " + kind.name().toLowerCase(Locale.ROOT)
          + " monitor on " + sites.stream().map(ProbeSite::name).toList() + " in process "
          + pid + "\n");
      for (ProbeSite s : sites) {
        if (s.spec().runtime()) {
          out.write("# " + s.name() + ": " + s.module() + "\n"); // which function was taken
        }
        if (decoder(s) != null) {
          out.write("# " + s.name() + ": decoded by plug-in " + decoder(s) + "\n");
        }
      }
    }
    out.flush();
  }

  /** A --hw site's watched rets, as {@code ,"returns":[...]}; empty otherwise. */
  private static String returns(ProbeSite s) {
    if (s.returns().isEmpty()) {
      return "";
    }
    StringBuilder sb = new StringBuilder(",\"returns\":[");
    for (int i = 0; i < s.returns().size(); i++) {
      sb.append(i > 0 ? "," : "").append(Json.quote(CallFormat.hex(s.returns().get(i))));
    }
    return sb.append(']').toString();
  }

  @Override
  public void hit(ProbeSession.Hit h) throws IOException {
    StringBuilder sb = new StringBuilder(200);
    SiteDecoders.Decoded d = h.decoded();
    if (json) {
      sb.append("{\"type\":\"hit\"").append(head()).append(",\"pid\":").append(h.pid())
          .append(",\"tid\":").append(h.tid()).append(",\"site\":")
          .append(Json.quote(h.site().name())).append(",\"time_ns\":").append(h.monotonicNanos());
      if (h.atReturn()) {
        sb.append(",\"rax\":").append(Json.quote(CallFormat.hex(h.rax())))
            .append(",\"duration_ns\":").append(h.durationNanos());
      } else {
        sb.append(",\"args\":{");
        for (int i = 0; i < REGS.length; i++) {
          sb.append(i > 0 ? "," : "").append('"').append(REGS[i]).append("\":")
              .append(Json.quote(CallFormat.hex(h.args()[i])));
        }
        sb.append('}');
      }
      if (d != null) {
        decodedJson(sb, h, d);
      }
      sb.append("}\n");
    } else {
      sb.append('[').append(h.tid()).append("] ").append(h.site().name());
      if (d != null && h.args() != null) {
        sb.append('(');
        for (int i = 0; i < d.arguments().size(); i++) {
          DecodedArgument a = d.arguments().get(i);
          sb.append(i > 0 ? ", " : "").append(a.name()).append('=').append(a.value());
        }
        sb.append(')');
      }
      if (h.atReturn()) {
        sb.append(" = ").append(d == null ? CallFormat.hex(h.rax()) : returned(d.returned()))
            .append(String.format(Locale.ROOT, " <%.1f us>", h.durationNanos() / 1000.0));
      } else if (d == null) {
        sb.append('(');
        for (int i = 0; i < REGS.length; i++) {
          sb.append(i > 0 ? ", " : "").append(REGS[i]).append('=')
              .append(CallFormat.hex(h.args()[i]));
        }
        sb.append(')');
      }
      sb.append('\n');
    }
    out.write(sb.toString());
  }

  /** A decoded return as text: its value, and "(failed)" when the value does not say so. */
  private static String returned(DecodedReturn r) {
    return r.failed() && r.errorName() == null ? r.value() + " (failed)" : r.value();
  }

  /**
   * {@code ,"decoded":{"decoder":..,"args":{name:value..},"return":..,"failed":..,"error":..}}:
   * args when the entry's registers are there, the rest at a return.
   */
  private static void decodedJson(StringBuilder sb, ProbeSession.Hit h, SiteDecoders.Decoded d) {
    sb.append(",\"decoded\":{\"decoder\":").append(Json.quote(d.plugin()));
    if (h.args() != null) {
      sb.append(",\"args\":{");
      for (int i = 0; i < d.arguments().size(); i++) {
        DecodedArgument a = d.arguments().get(i);
        sb.append(i > 0 ? "," : "").append(Json.quote(a.name())).append(':')
            .append(Json.quote(a.value()));
      }
      sb.append('}');
    }
    DecodedReturn r = d.returned();
    if (r != null) {
      sb.append(",\"return\":").append(Json.quote(r.value())).append(",\"failed\":")
          .append(r.failed());
      if (r.errorName() != null) {
        sb.append(",\"error\":").append(Json.quote(r.errorName()));
      }
    }
    sb.append('}');
  }

  /** The figures and the end of the run. */
  void summary(ProbeSession.Result r, Map<String, Object> extra) throws IOException {
    ProbeSession.Figures f = r.figures();
    boolean latency = kind == ProbeMonitor.Kind.LATENCY;
    if (json) {
      for (ProbeSession.SiteFigures s : f.sites()) {
        StringBuilder sb = new StringBuilder("{\"type\":\"site_summary\"").append(head())
            .append(",\"pid\":").append(f.pid()).append(",\"site\":")
            .append(Json.quote(s.site().name())).append(",\"calls\":").append(s.calls());
        if (latency) {
          stats(sb, stats(s.latency()));
        }
        out.write(sb.append("}\n").toString());
      }
      for (ProbeMonitor.ThreadStats t : sortedThreads(f)) {
        StringBuilder sb = new StringBuilder("{\"type\":\"thread_summary\"").append(head())
            .append(",\"pid\":").append(f.pid()).append(",\"tid\":").append(t.tid())
            .append(",\"site\":").append(Json.quote(f.sites().get(t.site()).site().name()))
            .append(",\"calls\":").append(t.calls());
        if (latency) {
          stats(sb, stats(t.latency()));
        }
        out.write(sb.append("}\n").toString());
      }
      StringBuilder sb = new StringBuilder("{\"type\":\"session_summary\"").append(head())
          .append(",\"pid\":").append(f.pid()).append(",\"monitor\":")
          .append(Json.quote(kind.name().toLowerCase(Locale.ROOT)))
          .append(",\"counters\":");
      CallFormat.value(sb, f.counters());
      for (Map.Entry<String, Object> e : extra.entrySet()) {
        sb.append(',').append(Json.quote(e.getKey())).append(':');
        CallFormat.value(sb, e.getValue());
      }
      out.write(sb.append("}\n").toString());
    } else {
      out.write(table(f, latency));
      if (latency) {
        for (ProbeSession.SiteFigures s : f.sites()) {
          if (s.calls() > 0) {
            out.write("\n" + s.site().name() + ":");
            out.write(CallFormat.histogram(stats(s.latency())));
          }
        }
      }
      if (!f.threads().isEmpty()) {
        out.write(String.format(Locale.ROOT, "%n%8s %12s %s%n", "tid", "calls", "site"));
        for (ProbeMonitor.ThreadStats t : sortedThreads(f)) {
          out.write(String.format(Locale.ROOT, "%8d %12d %s%s%n", t.tid(), t.calls(),
              f.sites().get(t.site()).site().name(), latency ? String.format(Locale.ROOT,
                  "  p50<=%dns max=%dns", stats(t.latency()).quantileUpperBound(0.5),
                  t.latency().maxNanos()) : ""));
        }
      }
      out.write("counters: " + f.counters() + "\n");
      for (Map.Entry<String, Object> e : extra.entrySet()) {
        out.write(e.getKey() + ": " + e.getValue() + "\n");
      }
    }
    out.flush();
  }

  private static List<ProbeMonitor.ThreadStats> sortedThreads(ProbeSession.Figures f) {
    return f.threads().stream().filter(t -> t.site() >= 0 && t.site() < f.sites().size())
        .sorted(Comparator.comparingInt(ProbeMonitor.ThreadStats::site)
            .thenComparingInt(ProbeMonitor.ThreadStats::tid)).toList();
  }

  static String table(ProbeSession.Figures f, boolean latency) {
    StringBuilder sb = new StringBuilder();
    if (latency) {
      sb.append(String.format(Locale.ROOT, "%12s %11s %11s %11s %11s %11s  %s%n", "calls",
          "avg us", "p50 us <=", "p90 us <=", "p99 us <=", "max us", "site"));
    } else {
      sb.append(String.format(Locale.ROOT, "%12s  %s%n", "calls", "site"));
    }
    for (ProbeSession.SiteFigures s : f.sites()) {
      if (latency) {
        LatencyStats st = stats(s.latency());
        sb.append(String.format(Locale.ROOT, "%12d %11.3f %11.3f %11.3f %11.3f %11.3f  %s%n",
            s.calls(), st.avgNanos() / 1e3, st.quantileUpperBound(0.5) / 1e3,
            st.quantileUpperBound(0.9) / 1e3, st.quantileUpperBound(0.99) / 1e3,
            st.maxNanos() / 1e3, s.site().name()));
      } else {
        sb.append(String.format(Locale.ROOT, "%12d  %s%n", s.calls(), s.site().name()));
      }
    }
    return sb.toString();
  }

  static LatencyStats stats(ProbeMonitor.Latency l) {
    return LatencyStats.ofBuckets(l.buckets(), l.sumNanos(), l.maxNanos());
  }

  private static void stats(StringBuilder sb, LatencyStats st) {
    sb.append(",\"avg_ns\":").append(st.avgNanos())
        .append(",\"max_ns\":").append(st.maxNanos())
        .append(",\"p50_ns_le\":").append(st.quantileUpperBound(0.50))
        .append(",\"p90_ns_le\":").append(st.quantileUpperBound(0.90))
        .append(",\"p99_ns_le\":").append(st.quantileUpperBound(0.99))
        .append(",\"buckets\":{");
    CallFormat.appendBuckets(sb, st.buckets());
  }

  private String head() {
    return ",\"schema\":" + SCHEMA + ",\"session\":" + Json.quote(session);
  }

  @Override
  public void flush() throws IOException {
    out.flush();
  }
}
