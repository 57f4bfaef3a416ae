package dev.polystack.otel.local;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.polystack.otel.model.Recording;
import dev.polystack.otel.model.Sample;
import dev.polystack.otel.model.StackTrace;
import dev.polystack.otel.model.TargetInfo;
import dev.polystack.plugin.api.Frame;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Checks the page's data, then renders it in real headless Chromium. */
class HtmlFlameGraphWriterTest {
  private static final Duration TIMEOUT = Duration.ofMinutes(2);
  private static final Pattern DATA = Pattern.compile(
      "<script type=\"application/json\" id=\"profile-data\">(.*?)</script>", Pattern.DOTALL);
  private static final Pattern FRAME =
      Pattern.compile("<g [^>]*name=\"([^\"]*)\" class=\"frame\"><rect [^>]*fill=\"([^\"]*)\"");

  @TempDir
  Path dir;

  @Test
  void dataIsProcessThenThreadThenFramesRootFirst() throws IOException {
    String page = html(TestRecordings.service());
    Matcher m = DATA.matcher(page);
    assertTrue(m.find());
    @SuppressWarnings("unchecked")
    Map<String, Object> root = (Map<String, Object>) MiniJson.parse(m.group(1));
    assertEquals("app-server (pid 4242)", root.get("n"));
    assertEquals(15L, root.get("v"));
    Map<String, Object> main = child(root, "app-server (tid 4242)");
    Map<String, Object> worker = child(root, "worker-1 (tid 4250)");
    assertEquals(8L, main.get("v"));
    assertEquals(7L, worker.get("v"));
    assertEquals("thread", worker.get("t"));
    Map<String, Object> compute = child(child(child(child(child(worker, "main"), "lua_pcall"),
        "lj_BC_FUNCC"), "handle_request (app.lua:42)"), "compute (app.lua:17)");
    assertEquals(4L, compute.get("v"));
    assertEquals("luajit", compute.get("t"));
    assertEquals("native", child(main, "main").get("t"));
    assertEquals("kernel", child(child(child(worker, "[error: unwind_failed]"), "read"),
        "do_syscall_64").get("t"));
    assertEquals(1L, child(worker, "[no frames]").get("v"));
    assertEquals(3L, child(child(child(main, "main"), "lua_pcall"), "libcodec.so+0x12040")
        .get("v"));
    assertChildrenFitInParents(root);
  }

  @Test
  void severalProcessesEachHoldTheirThreads() throws IOException {
    dev.polystack.plugin.api.Frame main = new dev.polystack.plugin.api.Frame(
        dev.polystack.plugin.api.Frame.NATIVE, 0x1000, "main", "", 0, 0, "", Map.of());
    var stack = new dev.polystack.otel.model.StackTrace(List.of(main));
    var r = new dev.polystack.otel.model.Recording(
        new dev.polystack.otel.model.TargetInfo(10, "/bin/a", List.of("/bin/a")), 0, 1, 1, "bpf",
        List.of(), List.of(
            new dev.polystack.otel.model.Sample(10, "a", 0, stack,
                Map.of("process.pid", "10", "process.executable.name", "a")),
            new dev.polystack.otel.model.Sample(20, "b", 0, stack,
                Map.of("process.pid", "20", "process.executable.name", "b"), 2)),
        Map.of());
    Matcher m = DATA.matcher(html(r));
    assertTrue(m.find());
    @SuppressWarnings("unchecked")
    Map<String, Object> root = (Map<String, Object>) MiniJson.parse(m.group(1));
    assertEquals("2 processes", root.get("n"));
    assertEquals(3L, root.get("v"));
    Map<String, Object> b = child(root, "process 20 (b)");
    assertEquals("process", b.get("t"));
    assertEquals(2L, b.get("v"));
    assertEquals(2L, child(child(b, "b (tid 20)"), "main").get("v"));
    assertEquals(1L, child(child(child(root, "process 10 (a)"), "a (tid 10)"), "main").get("v"));
    assertChildrenFitInParents(root);
  }

  @Test
  void pageIsSelfContainedWithTheRecordingFacts() throws IOException {
    String page = html(TestRecordings.service());
    // Nothing to fetch: no external scripts, styles or other resources.
    assertFalse(Pattern.compile("<(script|link|img|iframe)[^>]*\\s(src|href)=").matcher(page)
        .find());
    assertTrue(page.contains("<title>polystack: app-server (pid 4242)</title>"));
    assertTrue(page.contains("<dd>/opt/demo/bin/app-server --config /etc/demo/app.conf</dd>"));
    assertTrue(page.contains("<dd>2026-01-01T00:00:00Z to 2026-01-01T00:00:00.120Z (0.120 s)"));
    assertTrue(page.contains("<dd>15 from 2 threads</dd>"));
    assertTrue(page.contains("<dd>100 Hz requested, on-CPU rate not measured, 62.5 Hz wall per"
        + " thread (a thread every 10.000 ms)</dd>"), page);
    assertTrue(page.contains("<dd>ptrace</dd>"));
    assertTrue(page.contains("<dd>dropped.timeout: 2</dd>"));
    assertTrue(page.contains("d3-flame-graph 4.1.3"));
  }

  @Test
  void rendersAFlameGraphInChromium() throws Exception {
    Path file = dir.resolve("profile.html");
    Files.writeString(file, html(TestRecordings.service()));
    String dom = dumpDom(file);

    assertTrue(dom.contains("data-rendered=\"ok\""), () -> "page reported an error:\n" + dom);
    assertTrue(Pattern.compile("<svg [^>]*class=\"partition d3-flame-graph\"").matcher(dom).find(),
        dom);
    TreeSet<String> names = new TreeSet<>();
    Matcher frames = FRAME.matcher(dom);
    while (frames.find()) {
      String name = frames.group(1);
      names.add(name);
      int hue = hue(frames.group(2));
      if (name.contains("(app.lua:")) {
        assertTrue(hue >= 120 && hue <= 180, name + " is not in the LuaJIT hue: " + hue);
      } else if (name.equals("main") || name.equals("lua_pcall")) {
        assertTrue(hue >= 10 && hue <= 50, name + " is not in the native hue: " + hue);
      }
    }
    assertEquals(new TreeSet<>(List.of("app-server (pid 4242)", "app-server (tid 4242)",
        "worker-1 (tid 4250)", "main", "lua_pcall", "lj_BC_FUNCC", "libcodec.so+0x12040",
        "handle_request (app.lua:42)", "compute (app.lua:17)", "read", "do_syscall_64",
        "[error: unwind_failed]", "[no frames]")), names, dom);
  }

  @Test
  void searchHoverAndZoomWorkInChromium() throws Exception {
    Path file = dir.resolve("probed.html");
    // The probe acts like a user once the page has rendered: search, hover, click to zoom.
    Files.writeString(file, html(TestRecordings.service())
        .replace("<head>", "<head>" + FRAME_CLOCK).replace("</body>", PROBE + "</body>"));
    String dom = dumpDom(file);

    assertTrue(dom.contains("data-rendered=\"ok\""), () -> "page reported an error:\n" + dom);
    // Labels and widths arrive through d3 transitions, i.e. animation frames.
    assertTrue(dom.contains("class=\"d3-flame-graph-label\" style=\"display: block;\">"
        + "compute (app.lua:17)</div>"), () -> "frame labels are not drawn:\n" + dom);
    assertTrue(dom.contains("data-widths=\"1168,623,545\""), dom);
    assertFalse(dom.contains("data-probe="), dom);
    // Both threads' compute frames are highlighted, and the details line sums them.
    assertTrue(dom.contains("data-search=\"compute (app.lua:17)|compute (app.lua:17);"
        + "search: 9 of 15 total samples ( 60.000%)\""), dom);
    assertTrue(dom.contains(
        "data-tooltip=\"compute (app.lua:17) 5 samples, 33.33% of all luajit\""), dom);
    // Zoomed on the worker thread, it spans the whole chart and the main thread is gone.
    assertTrue(dom.contains("data-zoom=\"worker-1 (tid 4250)=full,main-thread=hidden\""), dom);
  }

  @Test
  void anAllocationPageHoldsEveryTypeAndShowsTheDefault() throws IOException {
    String page = html(TestRecordings.allocations());
    assertTrue(page.contains("<dt>sampling</dt><dd>one sample per 524288 bytes allocated, on"
        + " average</dd>"), page.substring(0, Math.min(page.length(), 3000)));
    Matcher m = DATA.matcher(page);
    assertTrue(m.find());
    @SuppressWarnings("unchecked")
    Map<String, Object> root = (Map<String, Object>) MiniJson.parse(m.group(1));
    assertEquals(4000L, root.get("v"), "alloc_space, the default, not the sample count");
    assertEquals(List.of(40L, 4000L, 3L, 300L), root.get("vs"));
    @SuppressWarnings("unchecked")
    Map<String, Object> thread = ((List<Map<String, Object>>) root.get("c")).get(0);
    assertEquals("thread", thread.get("t"));
    Map<String, Object> pcall = child(child(thread, "main"), "lua_pcall");
    assertEquals(List.of(10L, 1000L, 0L, 0L), pcall.get("vs"));
    assertChildrenFitInParents(root);
  }

  @Test
  void theSampleTypeSwitchRedrawsTheGraphInChromium() throws Exception {
    Path file = dir.resolve("alloc.html");
    String probe = """
        <script>
        setTimeout(function () {
          var body = document.body;
          function width(name) {
            return Math.round(document.querySelector('g.frame[name="' + name + '"] rect')
                .getBoundingClientRect().width);
          }
          try {
            var select = document.getElementById('sample-type');
            body.dataset.options = Array.from(select.options).map(function (o) {
              return o.textContent; }).join('|') + ';' + select.value + ';' + select.hidden;
            body.dataset.before = width('main') + ',' + width('lua_pcall');
            select.value = '3';
            select.dispatchEvent(new Event('change'));
            body.dataset.after = width('main') + ','
                + (document.querySelector('g.frame[name="lua_pcall"]') ? width('lua_pcall')
                    : 'gone');
          } catch (e) {
            body.dataset.probe = 'failed: ' + e;
          }
        }, 1000);
        </script>
        """;
    Files.writeString(file, html(TestRecordings.allocations())
        .replace("<head>", "<head>" + FRAME_CLOCK).replace("</body>", probe + "</body>"));
    String dom = dumpDom(file);
    assertTrue(dom.contains("data-rendered=\"ok\""), dom);
    assertFalse(dom.contains("data-probe="), dom);
    assertTrue(dom.contains("data-options=\"alloc_objects (count)|alloc_space (bytes)"
        + "|inuse_objects (count)|inuse_space (bytes);1;false\""), dom);
    Matcher before = Pattern.compile("data-before=\"(\\d+),(\\d+)\"").matcher(dom);
    assertTrue(before.find(), dom);
    // alloc_space: lua_pcall's 1000 of main's 4000 bytes.
    double share = Double.parseDouble(before.group(2)) / Double.parseDouble(before.group(1));
    assertEquals(0.25, share, 0.02, dom);
    // inuse_space: all 300 bytes in use are main's own; lua_pcall freed everything.
    Matcher after = Pattern.compile("data-after=\"(\\d+),(\\w+)\"").matcher(dom);
    assertTrue(after.find(), dom);
    assertTrue(after.group(2).equals("gone") || after.group(2).equals("0"), dom);
    assertTrue(dom.contains("data-sample-type=\"inuse_space\""), dom);
  }

  @Test
  void hostileNamesStayTextInChromium() throws Exception {
    String evil = "</script><script>document.body.dataset.rendered='pwned'</script>&amp;\u2028";
    Frame frame = new Frame("luajit", 0, evil, "x.lua", 1, 1, "", Map.of());
    Recording r = new Recording(new TargetInfo(7, "/opt/x<y>&z", List.of("/opt/x<y>&z", "<a>")),
        0, 1_000_000, 1_000_000, "snapshot", List.of(),
        List.of(new Sample(7, "t\"<i>", 0, new StackTrace(List.of(frame)), Map.of())), Map.of());
    Path file = dir.resolve("evil.html");
    Files.writeString(file, html(r));
    String dom = dumpDom(file);
    assertTrue(dom.contains("data-rendered=\"ok\""), dom);
    assertTrue(dom.contains("<title>polystack: x&lt;y&gt;&amp;z (pid 7)</title>"), dom);
    assertTrue(dom.contains("<dd>/opt/x&lt;y&gt;&amp;z &lt;a&gt;</dd>"), dom);
    assertTrue(dom.contains("name=\"t&quot;&lt;i&gt; (tid 7)\"")
        || dom.contains("name=\"t&quot;<i> (tid 7)\""), dom);
    assertTrue(dom.contains("&lt;/script&gt;&lt;script&gt;document.body.dataset.rendered="),
        dom);
  }

  /**
   * Headless Chromium under a virtual time budget runs timers but hardly any animation frames,
   * so d3 transitions would stall at random. Driving frames from timers, installed before d3
   * loads (it binds requestAnimationFrame once), makes them finish as in a visible tab.
   */
  private static final String FRAME_CLOCK = "<script>window.requestAnimationFrame = function (f)"
      + " { return setTimeout(function () { f(performance.now()); }, 16); };"
      + " window.cancelAnimationFrame = clearTimeout;</script>";

  private static final String PROBE = """
      <script>
      setTimeout(function () {
        var body = document.body;
        function frame(name) { return document.querySelector('g.frame[name="' + name + '"]'); }
        function width(name) {
          return Math.round(frame(name).querySelector('rect').getBoundingClientRect().width);
        }
        try {
          body.dataset.widths = [width('app-server (pid 4242)'), width('app-server (tid 4242)'),
              width('worker-1 (tid 4250)')].join(',');
          var search = document.getElementById('search');
          search.value = 'COMPUTE';
          search.dispatchEvent(new Event('input'));
          var hits = Array.from(document.querySelectorAll('g.frame')).filter(function (g) {
            return g.querySelector('rect').getAttribute('fill') === '#E600E6';
          }).map(function (g) { return g.getAttribute('name'); });
          body.dataset.search = hits.join('|') + ';'
              + document.getElementById('details').textContent;
          frame('compute (app.lua:17)').dispatchEvent(new MouseEvent('mouseover', {bubbles: true}));
          body.dataset.tooltip =
              document.querySelector('.d3-flame-graph-tip').textContent.replace(/\\n/g, ' ');
          var svgWidth = document.querySelector('svg.d3-flame-graph').getAttribute('width');
          frame('worker-1 (tid 4250)').dispatchEvent(new MouseEvent('click', {bubbles: true}));
          // d3-flame-graph lays out synchronously and animates afterwards: read the layout.
          var worker = frame('worker-1 (tid 4250)');
          var full = worker.getAttribute('width') === svgWidth ? 'full' : 'partial';
          body.dataset.zoom = 'worker-1 (tid 4250)=' + full + ',main-thread='
              + (frame('app-server (tid 4242)') ? 'visible' : 'hidden');
        } catch (e) {
          body.dataset.probe = 'failed: ' + e;
        }
      }, 1000);
      </script>
      """;

  private String dumpDom(Path file) throws Exception {
    Proc chromium = Proc.run(TIMEOUT, dir, chromium(), "--headless", "--no-sandbox",
        "--disable-gpu", "--user-data-dir=" + dir.resolve("chromium-profile"),
        "--virtual-time-budget=5000", "--window-size=1200,800", "--dump-dom",
        file.toUri().toString()).assertSuccess();
    return chromium.stdout();
  }

  private static String chromium() {
    for (String candidate : List.of("/usr/bin/chromium", "/usr/bin/chromium-browser",
        "/usr/bin/google-chrome")) {
      if (Files.isExecutable(Path.of(candidate))) {
        return candidate;
      }
    }
    throw new AssertionError("Chromium is not installed: HtmlFlameGraphWriterTest renders the"
        + " page in headless Chromium; install it (apt-get install chromium)");
  }

  private static int hue(String hsl) {
    Matcher m = Pattern.compile("hsl\\((\\d+),").matcher(hsl);
    assertTrue(m.find(), hsl);
    return Integer.parseInt(m.group(1));
  }

  @Test
  void headerListsOnlyLossesAsLostAndCaptureFiguresApart() throws IOException {
    String quiet = html(TestRecordings.bpf(Map.of()));
    assertTrue(quiet.contains("<dt>lost</dt><dd>nothing</dd>"), quiet);
    assertTrue(quiet.contains("<dt>tick capture</dt><dd>plans: 2, records: 298, ticks: 298</dd>"),
        quiet);
    String lossy = html(TestRecordings.bpf(Map.of("capture_plan_refused", 1L, "late_tick", 3L)));
    assertTrue(lossy.contains("<dt>lost</dt><dd>capture_plan_refused: 1, late_tick: 3</dd>"),
        lossy);
    assertFalse(lossy.contains("g_from_cache"), "a plug-in note is not a loss");
  }

  private static String html(Recording r) throws IOException {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    ProfileFormat.HTML.writer().write(r, out);
    return out.toString(StandardCharsets.UTF_8);
  }

  @SuppressWarnings("unchecked")
  private static Map<String, Object> child(Map<String, Object> node, String name) {
    for (Object c : (List<Object>) node.get("c")) {
      Map<String, Object> child = (Map<String, Object>) c;
      if (name.equals(child.get("n"))) {
        return child;
      }
    }
    throw new AssertionError("no child " + name + " under " + node.get("n"));
  }

  @SuppressWarnings("unchecked")
  private static void assertChildrenFitInParents(Map<String, Object> node) {
    List<Object> children = (List<Object>) node.getOrDefault("c", List.of());
    long sum = 0;
    for (Object c : children) {
      sum += (Long) ((Map<String, Object>) c).get("v");
      assertChildrenFitInParents((Map<String, Object>) c);
    }
    assertTrue(sum <= (Long) node.get("v"), "children exceed " + node.get("n"));
  }
}
