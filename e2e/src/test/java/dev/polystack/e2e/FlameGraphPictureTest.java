package dev.polystack.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.awt.Color;
import java.awt.image.BufferedImage;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.imageio.ImageIO;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The README's picture, docs/images/flamegraph.png, is the html flame graph of
 * {@code polystack demo} as headless Chromium draws it. This test draws it anew from a demo run
 * into e2e/target/flamegraph.png (docs/testing.md, "The picture in the README", says how to
 * commit it) and checks
 * that the committed picture still shows what the current writer draws, in what a reader sees:
 * the same size, a chart and not a blank or error page, LuaJIT frames in their green, native
 * frames in their warm hues (kernel frames in violet, a range of their own) and the
 * process/thread roots. Pixels are not compared: every run
 * samples differently.
 */
class FlameGraphPictureTest {
  static final int WIDTH = 1200;
  static final int HEIGHT = 800;
  private static final Pattern FRAME = Pattern.compile("<g [^>]*name=\"([^\"]*)\" class=\"frame\"");

  @TempDir Path dir;

  @Test
  void theCommittedPictureShowsWhatTheDemoDrawsNow() throws Exception {
    var result = Distribution.run(dir, Map.of(), "demo", "--duration", "2s");
    assertEquals(0, result.exitCode(), result.stderr());
    Path html = dir.resolve("polystack-demo/profile.html");

    // The page rendered, and its chart holds the demo program's frames, LuaJIT's and native.
    String dom = Tools.headlessChromium(dir.resolve("chromium-dom"), html, "--dump-dom")
        .stdout();
    assertTrue(dom.contains("data-rendered=\"ok\""), () -> "page reported an error:\n" + dom);
    TreeSet<String> names = new TreeSet<>();
    Matcher frames = FRAME.matcher(dom);
    while (frames.find()) {
      names.add(frames.group(1));
    }
    for (String frame : List.of("luajit (pid ", "luajit (tid ", "main", "main chunk (",
        "fib (", "checksum (", "sort_batch (")) {
      assertTrue(names.stream().anyMatch(n -> n.equals(frame) || n.startsWith(frame)),
          () -> "no frame " + frame + " in the drawn chart: " + names);
    }

    assertKindsHaveHueRangesOfTheirOwn(Files.readString(html));

    Path made = Distribution.root().resolve("e2e/target/flamegraph.png");
    Files.createDirectories(made.getParent());
    Files.deleteIfExists(made);
    Tools.headlessChromium(dir.resolve("chromium-shot"), html, "--hide-scrollbars",
        "--window-size=" + WIDTH + "," + HEIGHT, "--screenshot=" + made);
    Picture now = Picture.read(made);
    System.out.println("FlameGraphPictureTest: drew " + made + ": " + now);
    now.assertShowsAFlameGraph();

    Path committed = Distribution.root().resolve("docs/images/flamegraph.png");
    assertTrue(Files.size(committed) < 200 * 1024, committed + " is over 200 KiB");
    Picture readme = Picture.read(committed);
    readme.assertShowsAFlameGraph();
  }

  private static final Pattern HUE = Pattern.compile("(\\w+): \\[(\\d+), (\\d+), \\d+, \\d+\\]");

  /**
   * Native, kernel and LuaJIT frames are hashed over hue ranges that do not overlap (they once
   * did: native 10-50 and kernel 38-52, so main and libc looked like the kernel), and each
   * stays within the band {@link Picture} counts it in.
   */
  static void assertKindsHaveHueRangesOfTheirOwn(String page) {
    Matcher table = Pattern.compile("var hues = \\{([^}]*)\\}").matcher(page);
    assertTrue(table.find(), "no hue table in the page");
    Map<String, int[]> ranges = new java.util.HashMap<>();
    Matcher entry = HUE.matcher(table.group(1));
    while (entry.find()) {
      int first = Integer.parseInt(entry.group(2));
      ranges.put(entry.group(1), new int[] {first, first + Integer.parseInt(entry.group(3))});
    }
    List<String> kinds = List.of("native", "kernel", "luajit");
    for (String kind : kinds) {
      assertTrue(ranges.containsKey(kind), "no hue range for " + kind + ": " + table.group(1));
    }
    for (int i = 0; i < kinds.size(); i++) {
      for (int j = i + 1; j < kinds.size(); j++) {
        int[] a = ranges.get(kinds.get(i));
        int[] b = ranges.get(kinds.get(j));
        assertTrue(a[1] < b[0] || b[1] < a[0], kinds.get(i) + " hues " + a[0] + "-" + a[1]
            + " overlap " + kinds.get(j) + "'s " + b[0] + "-" + b[1]);
      }
    }
    assertTrue(ranges.get("native")[0] >= NATIVE_HUES[0]
        && ranges.get("native")[1] <= NATIVE_HUES[1], "native outside the counted band");
    assertTrue(ranges.get("kernel")[0] >= KERNEL_HUES[0]
        && ranges.get("kernel")[1] <= KERNEL_HUES[1], "kernel outside the counted band");
  }

  /** Hue bands Picture counts each kind in (inclusive), wider than the page's ranges. */
  static final int[] NATIVE_HUES = {5, 55};
  static final int[] KERNEL_HUES = {260, 310};

  /** What a reader sees in a screenshot: its size and how much of it is in each frame colour. */
  record Picture(Path file, int width, int height, double ink, double luajit, double nativeFrames,
      double kernel, double processOrThread) {

    static Picture read(Path file) throws IOException {
      BufferedImage image = ImageIO.read(file.toFile());
      assertTrue(image != null, file + " is not an image ImageIO reads");
      long ink = 0;
      long luajit = 0;
      long warm = 0;
      long kernel = 0;
      long roots = 0;
      float[] hsb = new float[3];
      for (int y = 0; y < image.getHeight(); y++) {
        for (int x = 0; x < image.getWidth(); x++) {
          int rgb = image.getRGB(x, y);
          Color.RGBtoHSB((rgb >> 16) & 0xff, (rgb >> 8) & 0xff, rgb & 0xff, hsb);
          float hue = hsb[0] * 360;
          if (hsb[2] < 0.95f || hsb[1] > 0.05f) {
            ink++;
          }
          // The page's hues (flamegraph.html): luajit 120-180, native 10-50, kernel 270-300,
          // spread by the frame's name; process and thread rows a pale blue-grey.
          if (hsb[1] > 0.25f && hue >= 120 && hue <= 180) {
            luajit++;
          } else if (hsb[1] > 0.35f && hue >= NATIVE_HUES[0] && hue <= NATIVE_HUES[1]) {
            warm++;
          } else if (hsb[1] > 0.25f && hue >= KERNEL_HUES[0] && hue <= KERNEL_HUES[1]) {
            kernel++;
          } else if (hsb[1] > 0.05f && hsb[1] < 0.25f && hue >= 190 && hue <= 230) {
            roots++;
          }
        }
      }
      double pixels = (double) image.getWidth() * image.getHeight();
      return new Picture(file, image.getWidth(), image.getHeight(), ink / pixels, luajit / pixels,
          warm / pixels, kernel / pixels, roots / pixels);
    }

    /**
     * Chromium's window size, ink on a good part of it, and each kind of frame over more than
     * its legend chip (~0.1% of the picture): the demo's LuaJIT functions, the native frames of
     * luajit and libc under them, and the process and thread rows at the bottom.
     */
    void assertShowsAFlameGraph() {
      assertEquals(WIDTH, width, this::toString);
      assertEquals(HEIGHT, height, this::toString);
      assertTrue(ink > 0.30, () -> "mostly blank: " + this);
      assertTrue(luajit > 0.02, () -> "no LuaJIT frames: " + this);
      assertTrue(nativeFrames > 0.10, () -> "no native frames: " + this);
      assertTrue(processOrThread > 0.005, () -> "no process or thread row: " + this);
    }

    @Override
    public String toString() {
      return String.format("%s %dx%d, ink %.3f, luajit %.3f, native %.3f, kernel %.3f,"
          + " process/thread %.3f", file.getFileName(), width, height, ink, luajit,
          nativeFrames, kernel, processOrThread);
    }
  }
}
