package dev.polystack.host.plugins;

import dev.polystack.host.sys.Credentials;
import dev.polystack.plugin.api.ApiVersion;
import dev.polystack.plugin.api.Plugin;
import dev.polystack.plugin.api.PluginDescriptor;
import dev.polystack.plugin.api.RuntimePlugin;
import dev.polystack.plugin.api.SampleType;
import java.io.IOException;
import java.net.MalformedURLException;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.ServiceConfigurationError;
import java.util.ServiceLoader;

/**
 * Finds plug-ins through {@link ServiceLoader}: on the host's class path (the bundled ones) and
 * in jars of explicit plug-in directories. Nothing else is ever loaded: no scan of the target,
 * no default directory, so what runs as root is only what the user pointed at, and as root
 * only what no other user can change ({@link PluginTrust}).
 */
public final class PluginLoader {

  /** Refuse absurd directories instead of opening thousands of class loaders. */
  static final int MAX_JARS_PER_DIRECTORY = 256;
  static final String CLASS_PATH = "class path";

  private final ApiVersion hostApi;
  private final ClassLoader hostLoader;
  private final Credentials credentials;
  private final PluginTrust trust;

  public PluginLoader() {
    this(ApiVersion.CURRENT, PluginLoader.class.getClassLoader(), Credentials.ofThisProcess());
  }

  PluginLoader(ApiVersion hostApi, ClassLoader hostLoader, Credentials credentials) {
    this.hostApi = hostApi;
    this.hostLoader = hostLoader;
    this.credentials = credentials;
    this.trust = new PluginTrust(credentials.root());
  }

  /** Checks that every entry is a readable directory before anything is loaded. */
  public static void validatePluginPath(List<Path> pluginPath) throws PluginPathException {
    for (Path dir : pluginPath) {
      if (!Files.exists(dir)) {
        throw new PluginPathException(
            "--plugin-path " + dir + ": no such directory; pass a directory that holds plug-in jars");
      }
      if (!Files.isDirectory(dir)) {
        throw new PluginPathException(
            "--plugin-path " + dir + ": not a directory; pass the directory that holds the jar, "
                + "not the jar itself");
      }
      if (!Files.isReadable(dir)) {
        throw new PluginPathException(
            "--plugin-path " + dir + ": not readable; check its permissions");
      }
    }
  }

  /**
   * Loads the class-path plug-ins, then each jar of each directory with its own class loader
   * (plug-ins cannot see each other's classes). The first plug-in with a given id wins.
   */
  public PluginRegistry load(List<Path> pluginPath) throws PluginPathException {
    validatePluginPath(pluginPath);
    List<LoadedPlugin> loaded = new ArrayList<>();
    List<PluginRefusal> refused = new ArrayList<>();
    Map<String, String> seen = new HashMap<>();
    Set<String> ran = new LinkedHashSet<>();
    collect(hostLoader, CLASS_PATH, null, loaded, refused, seen, ran);
    for (Path given : pluginPath) {
      Path dir = trust.directory(given, refused);
      if (dir == null) {
        continue;
      }
      for (Path jar : jarsIn(dir, refused)) {
        ClassLoader loader;
        try {
          loader = new URLClassLoader(
              "plugin:" + jar.getFileName(), new URL[] {jar.toUri().toURL()}, hostLoader);
        } catch (MalformedURLException e) {
          refused.add(new PluginRefusal(jar.toString(), "cannot be opened: " + e.getMessage()));
          continue;
        }
        // The class loader stays open for the life of the host: plug-in classes are used until
        // exit, and closing it would break lazily loaded classes.
        collect(loader, jar.toString(), loader, loaded, refused, seen, ran);
      }
    }
    loaded.sort(Comparator.comparing(LoadedPlugin::id));
    return new PluginRegistry(loaded, refused, privilegeWarning(ran));
  }

  /**
   * One line when code from --plugin-path ran (a provider was instantiated, whether or not it
   * was then accepted) in a process with root's rights or capabilities.
   */
  private List<String> privilegeWarning(Set<String> ran) {
    ran.remove(CLASS_PATH);
    if (ran.isEmpty() || !credentials.privileged()) {
      return List.of();
    }
    return List.of("third-party plug-in code from " + String.join(", ", ran)
        + " ran inside polystack, which runs " + (credentials.root() ? "as root"
            : "with capabilities (CapEff " + Long.toHexString(credentials.capabilities()) + ")")
        + ": it can do anything polystack can; load only plug-ins you trust");
  }

  private List<Path> jarsIn(Path dir, List<PluginRefusal> refused)
      throws PluginPathException {
    List<Path> jars = new ArrayList<>();
    try (DirectoryStream<Path> entries = Files.newDirectoryStream(dir, "*.jar")) {
      for (Path jar : entries) {
        if (jars.size() == MAX_JARS_PER_DIRECTORY) {
          refused.add(new PluginRefusal(dir.toString(),
              "more than " + MAX_JARS_PER_DIRECTORY + " jars; the rest were not loaded"));
          break;
        }
        String distrust = trust.jar(jar);
        if (distrust != null) {
          refused.add(new PluginRefusal(jar.toString(), distrust));
        } else if (Files.isRegularFile(jar)) {
          jars.add(jar);
        }
      }
    } catch (IOException e) {
      throw new PluginPathException(
          "--plugin-path " + dir + ": cannot list it (" + e.getMessage() + ")");
    }
    jars.sort(Comparator.naturalOrder());
    return jars;
  }

  /**
   * Instantiates every provider visible through {@code loader}; with {@code onlyFrom} set, keeps
   * only providers defined by that loader (its parent's are found through the class path pass).
   */
  private void collect(
      ClassLoader loader,
      String source,
      ClassLoader onlyFrom,
      List<LoadedPlugin> loaded,
      List<PluginRefusal> refused,
      Map<String, String> seen,
      Set<String> ran) {
    ServiceLoader<Plugin> services = ServiceLoader.load(Plugin.class, loader);
    var providers = services.stream().iterator();
    while (true) {
      ServiceLoader.Provider<Plugin> provider;
      try {
        if (!providers.hasNext()) {
          break;
        }
        provider = providers.next();
      } catch (ServiceConfigurationError | LinkageError e) {
        refused.add(new PluginRefusal(source, "bad service entry: " + oneLine(e)));
        continue;
      }
      if (onlyFrom != null && provider.type().getClassLoader() != onlyFrom) {
        continue;
      }
      ran.add(source);
      accept(provider, source, loaded, refused, seen);
    }
  }

  private void accept(
      ServiceLoader.Provider<Plugin> provider,
      String source,
      List<LoadedPlugin> loaded,
      List<PluginRefusal> refused,
      Map<String, String> seen) {
    String className = provider.type().getName();
    Plugin plugin;
    PluginDescriptor descriptor;
    try {
      plugin = provider.get();
      descriptor = plugin.descriptor();
    } catch (ServiceConfigurationError | RuntimeException | LinkageError e) {
      refused.add(new PluginRefusal(source,
          "plug-in " + className + " failed to start: " + oneLine(e)
              + "; report it to the plug-in's author"));
      return;
    }
    if (descriptor == null) {
      refused.add(new PluginRefusal(source,
          "plug-in " + className + " returned no descriptor; report it to the plug-in's author"));
      return;
    }
    ApiVersion wanted = descriptor.apiVersion();
    if (!hostApi.canLoad(wanted)) {
      refused.add(new PluginRefusal(source,
          "plug-in '" + descriptor.id() + "' needs plug-in API " + wanted
              + " but this host provides " + hostApi + (wanted.major() < hostApi.major()
                  ? "; rebuild it against plugin-api " + hostApi.major() + ".x"
                      + " (docs/plugin-authoring.md, \"Moving to API " + hostApi.major()
                      + ".0\")"
                  : "; use a build of the plug-in for API " + hostApi.major() + ".x (minor <= "
                      + hostApi.minor() + ")")));
      return;
    }
    List<SampleType> sampleTypes = List.of();
    if (plugin instanceof RuntimePlugin runtime) {
      try {
        sampleTypes = runtime.sampleTypes();
      } catch (RuntimeException | LinkageError e) {
        refused.add(new PluginRefusal(source, "plug-in '" + descriptor.id()
            + "' failed to declare its sample types: " + oneLine(e)
            + "; report it to the plug-in's author"));
        return;
      }
      var problem = SampleType.declarationProblem(descriptor.id(), sampleTypes);
      if (problem.isPresent()) {
        refused.add(new PluginRefusal(source, "plug-in '" + descriptor.id() + "': "
            + problem.get() + "; report it to the plug-in's author"));
        return;
      }
    }
    String first = seen.putIfAbsent(descriptor.id(), source);
    if (first != null) {
      refused.add(new PluginRefusal(source,
          "plug-in id '" + descriptor.id() + "' is already provided by " + first
              + "; remove one of them"));
      return;
    }
    loaded.add(new LoadedPlugin(plugin, descriptor, source, sampleTypes));
  }

  static String oneLine(Throwable t) {
    Throwable root = t;
    for (int i = 0; i < 8 && root.getCause() != null; i++) {
      root = root.getCause();
    }
    String message = root.getMessage();
    String text = root.getClass().getSimpleName() + (message == null ? "" : ": " + message);
    return text.replace('\n', ' ').replace('\r', ' ');
  }
}
