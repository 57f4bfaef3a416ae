package dev.polystack.e2e;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.TreeSet;

/**
 * Bounds for the tests' statistical assertions: how far a sampled share, or the distance
 * between two sampled profiles, strays by chance alone. Each test class spends a budget of one
 * chance failure in {@link #RUNS} runs, split evenly over its assertions (a union bound), so a
 * failure means the property is wrong, not that the dice were. Samples are modelled as
 * independent draws (multinomial counts), which is what a timer tick is to a program's lines.
 */
final class SamplingNoise {
  /** Chance alone may fail a test class once in this many runs, at most. */
  static final double RUNS = 1000;

  /** Simulated pairs of profiles per bound: enough for the mean and spread of the distance. */
  private static final int SIMULATIONS = 4000;

  private SamplingNoise() {}

  /** The probability each of a class's {@code assertions} statistical assertions may fail. */
  static double alpha(int assertions) {
    return 1 / (RUNS * assertions);
  }

  /**
   * The total variation distance that two profiles of one and the same distribution exceed with
   * probability below {@code alpha}: profile A of {@code nA} samples, B of {@code nB}, the
   * distribution estimated by pooling both (A's and B's shares, weighted by their samples).
   *
   * <p>Simulated: {@value #SIMULATIONS} pairs drawn from the pooled shares give the mean m and
   * the standard deviation s of the distance; the bound is m + z s. The distance is half a sum
   * of absolute differences; its tail relative to s is heaviest with two keys, where it is one
   * folded normal |N(0, v)| (mean 0.798 v, sd 0.603 v), so z is the one that puts that case's
   * tail at alpha ({@link #foldedNormalZ}); more keys only make the sum more normal. A fixed
   * seed makes the bound a function of the data alone.
   */
  static double tvdBound(Map<String, Double> sharesA, double nA, Map<String, Double> sharesB,
      double nB, double alpha) {
    TreeSet<String> keys = new TreeSet<>(sharesA.keySet());
    keys.addAll(sharesB.keySet());
    List<Double> pooled = new ArrayList<>();
    for (String k : keys) {
      pooled.add((sharesA.getOrDefault(k, 0.0) * nA + sharesB.getOrDefault(k, 0.0) * nB)
          / (nA + nB));
    }
    int a = (int) Math.max(1, Math.round(nA));
    int b = (int) Math.max(1, Math.round(nB));
    double[] cumulative = new double[pooled.size()];
    double sum = 0;
    for (int i = 0; i < cumulative.length; i++) {
      sum += pooled.get(i);
      cumulative[i] = sum;
    }
    SplittableRandom random = new SplittableRandom(keys.hashCode() * 31L + a * 7L + b);
    double mean = 0;
    double squares = 0;
    for (int s = 0; s < SIMULATIONS; s++) {
      int[] countsA = draw(cumulative, a, random);
      int[] countsB = draw(cumulative, b, random);
      double tvd = 0;
      for (int i = 0; i < cumulative.length; i++) {
        tvd += Math.abs(countsA[i] / (double) a - countsB[i] / (double) b) / 2;
      }
      mean += tvd;
      squares += tvd * tvd;
    }
    mean /= SIMULATIONS;
    double sd = Math.sqrt(Math.max(0, squares / SIMULATIONS - mean * mean));
    return mean + foldedNormalZ(alpha) * sd;
  }

  private static int[] draw(double[] cumulative, int n, SplittableRandom random) {
    int[] counts = new int[cumulative.length];
    double total = cumulative[cumulative.length - 1];
    for (int i = 0; i < n; i++) {
      double u = random.nextDouble() * total;
      int lo = 0;
      int hi = cumulative.length - 1;
      while (lo < hi) {
        int mid = (lo + hi) >>> 1;
        if (cumulative[mid] > u) {
          hi = mid;
        } else {
          lo = mid + 1;
        }
      }
      counts[lo]++;
    }
    return counts;
  }

  /**
   * z such that a folded normal |N(0, v)| exceeds its mean + z * its sd with probability
   * {@code alpha}: (Phi^-1(1 - alpha/2) - sqrt(2/pi)) / sqrt(1 - 2/pi); 5.4 for 5e-5.
   */
  static double foldedNormalZ(double alpha) {
    double x = normalUpperQuantile(alpha / 2);
    return (x - Math.sqrt(2 / Math.PI)) / Math.sqrt(1 - 2 / Math.PI);
  }

  /** x with P(N(0,1) > x) = p, by bisection on the tail (p in (0, 0.5]). */
  static double normalUpperQuantile(double p) {
    double lo = 0;
    double hi = 40;
    for (int i = 0; i < 200; i++) {
      double mid = (lo + hi) / 2;
      if (normalUpperTail(mid) > p) {
        lo = mid;
      } else {
        hi = mid;
      }
    }
    return (lo + hi) / 2;
  }

  /** P(N(0,1) > x) for x >= 0: erfc(x / sqrt 2) / 2, by its continued fraction (Lentz). */
  static double normalUpperTail(double x) {
    if (x < 1) {
      // Near 0 the series of the density's integral converges fast.
      double term = x;
      double sum = x;
      for (int k = 1; k < 200; k++) {
        term *= -x * x / 2 / k;
        sum += term / (2 * k + 1);
      }
      return 0.5 - sum / Math.sqrt(2 * Math.PI);
    }
    // Mills ratio R(x) = 1/(x + 1/(x + 2/(x + 3/(x + ...)))); tail = density * R(x).
    double f = x;
    double c = x;
    double d = 0;
    for (int k = 1; k < 500; k++) {
      d = x + k * d;
      d = d == 0 ? 1e-300 : 1 / d;
      c = x + k / c;
      c = c == 0 ? 1e-300 : c;
      double delta = c * d;
      f *= delta;
      if (Math.abs(delta - 1) < 1e-15) {
        break;
      }
    }
    return Math.exp(-x * x / 2) / Math.sqrt(2 * Math.PI) / f;
  }

  /**
   * The largest count k such that Binomial(n, p) is below k with probability at most
   * {@code alpha}: a share p claimed for n samples fails by chance only below this many.
   */
  static long binomialLower(long n, double p, double alpha) {
    double[] pmf = binomialPmf(n, p);
    double below = 0;
    for (int k = 0; k <= n; k++) {
      if (below + pmf[k] > alpha) {
        return k;
      }
      below += pmf[k];
    }
    return n;
  }

  /**
   * The smallest count k such that Binomial(n, p) exceeds k with probability at most
   * {@code alpha}: a rate p claimed for n samples fails by chance only above this many.
   */
  static long binomialUpper(long n, double p, double alpha) {
    double[] pmf = binomialPmf(n, p);
    double above = 0;
    for (int k = (int) n; k >= 0; k--) {
      if (above + pmf[k] > alpha) {
        return k;
      }
      above += pmf[k];
    }
    return 0;
  }

  private static double[] binomialPmf(long n, double p) {
    if (n < 0 || n > 10_000_000 || p <= 0 || p >= 1) {
      throw new IllegalArgumentException("n " + n + ", p " + p);
    }
    double[] log = new double[(int) n + 1];
    log[0] = n * Math.log1p(-p);
    double odds = Math.log(p) - Math.log1p(-p);
    double max = log[0];
    for (int k = 0; k < n; k++) {
      log[k + 1] = log[k] + Math.log((double) (n - k) / (k + 1)) + odds;
      max = Math.max(max, log[k + 1]);
    }
    double[] pmf = new double[log.length];
    double total = 0;
    for (int k = 0; k < log.length; k++) {
      pmf[k] = Math.exp(log[k] - max);
      total += pmf[k];
    }
    for (int k = 0; k < pmf.length; k++) {
      pmf[k] /= total;
    }
    return pmf;
  }
}
