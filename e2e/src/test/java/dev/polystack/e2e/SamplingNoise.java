package dev.polystack.e2e;

import java.util.Arrays;
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
  /**
   * Chance alone may fail a test class once in this many runs, at most: with the suite's other
   * bounds, the whole suite fails by chance below once in 200 runs (docs/testing.md, "Bounds
   * and their false-failure rates", has the table).
   */
  static final double RUNS = 2000;

  /** Simulated pairs of profiles per bound: 50 beyond the 1-in-1000 quantile. */
  private static final int SIMULATIONS = 50_000;

  private SamplingNoise() {}

  /**
   * Independent samples' worth per period of a profile whose counts are periods: S samples
   * stand for P periods, P - S of them for two ticks (weight 2) and 2S - P for one. The
   * effective count of such weights is (sum w)^2 / sum w^2 = P^2 / (3P - 2S), so a period is
   * worth P / (3P - 2S): 1 when every sample is one period, 1/2 when every sample stands for
   * two. (2S - P) / P, used before, fell to 0 at S = P/2 and let every bound pass.
   */
  static double effectivePerPeriod(long samples, long periods) {
    if (periods <= 0 || samples <= 0) {
      return 0;
    }
    return periods / (3.0 * periods - 2.0 * Math.min(samples, periods));
  }

  /** The probability each of a class's {@code assertions} statistical assertions may fail. */
  static double alpha(int assertions) {
    return 1 / (RUNS * assertions);
  }

  /**
   * The total variation distance that two profiles of one and the same distribution exceed with
   * probability below {@code alpha}: profile A of {@code nA} samples, B of {@code nB}, the
   * distribution estimated by pooling both (A's and B's shares, weighted by their samples).
   *
   * <p>Simulated: {@value #SIMULATIONS} pairs drawn from the pooled shares give the distance's
   * quantiles q1 at 1e-2 and q2 at 1e-3; the tail is extended from there as an exponential
   * (q2 + (q2 - q1) log10(1e-3 / alpha)), which a binomial's or a sum of them decays faster
   * than, plus one sample's share of the smaller profile for the lattice of small counts. A
   * normal tail (mean + z sd) is not enough: a key of 0.2% share makes the distance skewed and
   * exceeded that bound 9x more often than alpha. Checked against the exact distribution for two
   * keys (shares 0.5 to 0.998, 150 to 2,400 samples): chance exceeds this bound at most 0.66
   * alpha there. A fixed seed makes the bound a function of the data alone.
   */
  static double tvdBound(Map<String, Double> sharesA, double nA, Map<String, Double> sharesB,
      double nB, double alpha) {
    if (alpha >= 1e-3) {
      throw new IllegalArgumentException("alpha " + alpha + ": the tail is extended from 1e-3");
    }
    TreeSet<String> keys = new TreeSet<>(sharesA.keySet());
    keys.addAll(sharesB.keySet());
    double[] cumulative = new double[keys.size()];
    double sum = 0;
    int i = 0;
    for (String k : keys) {
      sum += (sharesA.getOrDefault(k, 0.0) * nA + sharesB.getOrDefault(k, 0.0) * nB)
          / (nA + nB);
      cumulative[i++] = sum;
    }
    int a = (int) Math.max(1, Math.round(nA));
    int b = (int) Math.max(1, Math.round(nB));
    SplittableRandom random = new SplittableRandom(keys.hashCode() * 31L + a * 7L + b);
    double[] distances = new double[SIMULATIONS];
    for (int s = 0; s < SIMULATIONS; s++) {
      int[] countsA = draw(cumulative, a, random);
      int[] countsB = draw(cumulative, b, random);
      double tvd = 0;
      for (int k = 0; k < cumulative.length; k++) {
        tvd += Math.abs(countsA[k] / (double) a - countsB[k] / (double) b) / 2;
      }
      distances[s] = tvd;
    }
    Arrays.sort(distances);
    double q1 = distances[(int) Math.ceil(SIMULATIONS * (1 - 1e-2)) - 1];
    double q2 = distances[(int) Math.ceil(SIMULATIONS * (1 - 1e-3)) - 1];
    return q2 + (q2 - q1) * Math.log10(1e-3 / alpha) + 1.0 / Math.min(a, b);
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

  /**
   * The largest count k such that Poisson(lambda) is below k with probability at most
   * {@code alpha}: ticks expected at lambda fail by chance only below this many.
   */
  static long poissonLower(double lambda, double alpha) {
    double below = 0;
    for (long k = 0; ; k++) {
      double p = poissonPmf(lambda, k);
      if (below + p > alpha) {
        return k;
      }
      below += p;
    }
  }

  /**
   * The smallest count k such that Poisson(lambda) exceeds k with probability at most
   * {@code alpha}: ticks expected at lambda fail by chance only above this many.
   */
  static long poissonUpper(double lambda, double alpha) {
    double atMost = 0;
    for (long k = 0; ; k++) {
      atMost += poissonPmf(lambda, k);
      if (1 - atMost <= alpha) {
        return k;
      }
    }
  }

  private static double poissonPmf(double lambda, long k) {
    if (!(lambda > 0) || lambda > 1e6) {
      throw new IllegalArgumentException("lambda " + lambda);
    }
    double log = -lambda + k * Math.log(lambda);
    for (long i = 2; i <= k; i++) {
      log -= Math.log(i);
    }
    return Math.exp(log);
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
