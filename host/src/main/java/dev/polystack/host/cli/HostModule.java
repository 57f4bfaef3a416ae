package dev.polystack.host.cli;

import com.google.inject.AbstractModule;
import com.google.inject.Provides;
import com.google.inject.Singleton;
import dev.polystack.host.output.Outputs;
import dev.polystack.host.plugins.PluginGuard;
import dev.polystack.host.plugins.PluginLoader;

/**
 * The run-wide services of one command-line run: console, plug-in loader, plug-in guard and
 * output writer, injected into the picocli commands (created through Guice). Each command builds
 * its per-run objects (sessions, samplers, sinks) from its options with their constructors.
 */
final class HostModule extends AbstractModule {
  private final Console console;

  HostModule(Console console) {
    this.console = console;
  }

  @Override
  protected void configure() {
    bind(Console.class).toInstance(console);
    bind(PluginLoader.class).toInstance(new PluginLoader());
  }

  /** Read once per run: the credentials and the sudo caller decide how files are written. */
  @Provides
  @Singleton
  Outputs outputs() {
    return Outputs.forThisProcess(System.getenv());
  }

  @Provides
  @Singleton
  PluginGuard pluginGuard(Console console) {
    return new PluginGuard(console::warn);
  }
}
