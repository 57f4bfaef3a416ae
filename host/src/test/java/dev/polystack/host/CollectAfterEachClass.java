package dev.polystack.host;

import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * Collects garbage after every test class of the host's suite, which runs in one JVM: a parsed
 * ELF file holds its descriptor until it is collected (docs/testing.md, "Open files"), and with
 * CI's limit of 1024 descriptors the files earlier classes dropped could leave a later class's
 * own opens (a test's temporary files, class loading) without one. polystack's opens wait for a
 * collection themselves (DescriptorLimit); test code and the JDK do not.
 */
public final class CollectAfterEachClass implements AfterAllCallback {
  @Override
  public void afterAll(ExtensionContext context) {
    System.gc();
  }
}
