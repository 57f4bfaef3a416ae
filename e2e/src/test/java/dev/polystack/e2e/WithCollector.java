package dev.polystack.e2e;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/**
 * Base of the test classes that share one plain-text {@link Collector}: started before the
 * class's first test, stopped after its last (test classes run one at a time). TLS tests start
 * their own.
 */
abstract class WithCollector {
  static Collector collector;

  @BeforeAll
  static void startCollector() throws Exception {
    collector = Collector.start();
  }

  @AfterAll
  static void stopCollector() {
    if (collector != null) {
      collector.close();
      collector = null;
    }
  }
}
