package dev.polystack.host.alloc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * The kernel's countdown and table, in Java with a seeded random: sampled allocations, weighed
 * as the host weighs them, give each path its share of the bytes and the objects.
 */
class ByteSamplingTest {
  private static final long MEAN = ByteSampling.DEFAULT_MEAN;
  /** Mixed sizes, one above the mean: the weight must correct the probability of each. */
  private static final long[] SIZES = {16, 48, 200, 1000, 4096, 24, 64000, 512, 3_000_000};

  @Test
  void weightedSharesOfAThreeToOneStreamAreWithinAPoint() {
    ByteSampling.Countdown countdown = new ByteSampling.Countdown(MEAN, new Random(28)::nextInt);
    double[] bytes = new double[2];
    double[] objects = new double[2];
    long trueBytes = 0;
    long trueObjects = 0;
    long sampled = 0;
    // Variances of the unbiased totals: each allocation's estimate is w with probability 1/w.
    double objectsVariance = 0;
    double bytesVariance = 0;
    for (int round = 0; round < 2_000_000; round++) {
      long size = SIZES[round % SIZES.length];
      for (int k = 0; k < 4; k++) {
        int path = k < 3 ? 0 : 1;
        trueBytes += size;
        trueObjects++;
        double p = 1 / ByteSampling.weight(size, MEAN);
        objectsVariance += (1 - p) / p;
        bytesVariance += (double) size * size * (1 - p) / p;
        if (countdown.sampled(size)) {
          double w = ByteSampling.weight(size, MEAN);
          bytes[path] += w * size;
          objects[path] += w;
          sampled++;
        }
      }
    }
    double share = bytes[0] / (bytes[0] + bytes[1]);
    String figures = "share " + share + ", " + sampled + " samples";
    assertEquals(0.75, share, 0.01, figures);
    // Totals within 4 standard errors: objects are few-sampled (a 16-byte block is sampled
    // once in 32768), so their estimate is much noisier than the bytes'.
    assertEquals(trueBytes, bytes[0] + bytes[1], 4 * Math.sqrt(bytesVariance), figures);
    assertEquals(trueObjects, objects[0] + objects[1], 4 * Math.sqrt(objectsVariance), figures);
  }

  @Test
  void gapsAreExponentialWithTheMean() {
    ByteSampling.Countdown countdown = new ByteSampling.Countdown(MEAN, new Random(7)::nextInt);
    int n = 1_000_000;
    double sum = 0;
    int aboveMean = 0;
    for (int i = 0; i < n; i++) {
      long gap = countdown.draw();
      sum += gap;
      aboveMean += gap > MEAN ? 1 : 0;
    }
    assertEquals(1.0, sum / n / MEAN, 0.01);
    // P(X > mean) = 1/e for an exponential.
    assertEquals(Math.exp(-1), aboveMean / (double) n, 0.005);
  }

  @Test
  void everyCallWeighsOneAndLargeBlocksWeighAboutOne() {
    assertEquals(1.0, ByteSampling.weight(100, 0));
    assertEquals(1.0, ByteSampling.weight(100L << 30, MEAN), 1e-9);
    // A small block stands for about mean/size blocks.
    assertEquals(MEAN / 16.0, ByteSampling.weight(16, MEAN), 1.0);
    long[] t = ByteSampling.table(MEAN);
    assertEquals(0, t[0]);
    for (int i = 1; i < t.length; i++) {
      assertTrue(t[i] >= t[i - 1], "table not monotone at " + i);
    }
  }
}
