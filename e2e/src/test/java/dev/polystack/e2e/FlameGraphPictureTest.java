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
 * into e2e/target/flamegraph.png (README, "Run the tests", says how to commit it) and checks
 * that the committed picture still shows what the current writer draws, in what a reader sees:
 * the same size, a chart and not a blank or error page, LuaJIT frames in their green, native
 * frames in their warm hues and the process/thread roots. Pixels are not compared: every run
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

  /** What a reader sees in a screenshot: its size and how much of it is in each frame colour. */
  record Picture(Path file, int width, int height, double ink, double luajit, double nativeOrKernel,
      double processOrThread) {

    static Picture read(Path file) throws IOException {
      BufferedImage image = ImageIO.read(file.toFile());
      assertTrue(image != null, file + " is not an image ImageIO reads");
      long ink = 0;
      long luajit = 0;
      long warm = 0;
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
          // The page's hues (flamegraph.html): luajit 150, native 25 and kernel 45, each
          // spread a little by the frame's name; process and thread rows a pale blue-grey.
          if (hsb[1] > 0.25f && hue >= 120 && hue <= 180) {
            luajit++;
          } else if (hsb[1] > 0.35f && hue >= 5 && hue <= 60) {
            warm++;
          } else if (hsb[1] > 0.05f && hsb[1] < 0.25f && hue >= 190 && hue <= 230) {
            roots++;
          }
        }
      }
      double pixels = (double) image.getWidth() * image.getHeight();
      return new Picture(file, image.getWidth(), image.getHeight(), ink / pixels, luajit / pixels,
          warm / pixels, roots / pixels);
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
      assertTrue(nativeOrKernel > 0.10, () -> "no native frames: " + this);
      assertTrue(processOrThread > 0.005, () -> "no process or thread row: " + this);
    }

    @Override
    public String toString() {
      return String.format("%s %dx%d, ink %.3f, luajit %.3f, native/kernel %.3f,"
          + " process/thread %.3f", file.getFileName(), width, height, ink, luajit,
          nativeOrKernel, processOrThread);
    }
  }
}
