package dev.polystack.host.plugins;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

/**
 * Which plug-in files a root process may run. As root, a jar is code run with every privilege,
 * so it and its directory, and every directory above, must be changeable by root alone: owned
 * by root and not writable by group or others (a sticky directory such as /tmp is allowed
 * above the plug-in directory, since its other users cannot rename root's entries), and a jar
 * must not be a symbolic link. Without root nothing is checked: the user can only hand their
 * own rights to their own code. docs/plugin-authoring.md, "Packaging for --plugin-path".
 */
final class PluginTrust {
  private static final int GROUP_WRITE = 0020;
  private static final int OTHER_WRITE = 0002;
  private static final int STICKY = 01000;
  private static final String FIX = "; as root polystack runs only plug-ins no other user can"
      + " change: install the jar root-owned and not group/other-writable in a directory that is"
      + " too (sudo install -o root -g root -m 0644 JAR /usr/local/lib/polystack/plugins/)";

  private final boolean enforced;

  PluginTrust(boolean enforced) {
    this.enforced = enforced;
  }

  boolean enforced() {
    return enforced;
  }

  /**
   * The directory to load jars from: the directory itself without root, else its real path
   * (so no link in it can be swapped later) once it and its ancestors pass; null if refused,
   * with the reason added to {@code refused}.
   */
  Path directory(Path dir, List<PluginRefusal> refused) {
    if (!enforced) {
      return dir;
    }
    Path real;
    try {
      real = dir.toRealPath();
    } catch (IOException e) {
      refused.add(new PluginRefusal(dir.toString(), "cannot resolve it (" + e.getMessage()
          + "); nothing in it was loaded"));
      return null;
    }
    String problem = problem(real, false);
    if (problem != null) {
      refused.add(new PluginRefusal(dir.toString(), "plug-in directory " + problem
          + "; nothing in it was loaded" + FIX));
      return null;
    }
    for (Path up = real.getParent(); up != null; up = up.getParent()) {
      problem = problem(up, true);
      if (problem != null) {
        refused.add(new PluginRefusal(dir.toString(), "its parent directory " + up + " "
            + problem + "; nothing in it was loaded" + FIX));
        return null;
      }
    }
    return real;
  }

  /** Null when {@code jar} (an entry of a checked directory) may load, else why not. */
  String jar(Path jar) {
    if (!enforced) {
      return null;
    }
    if (Files.isSymbolicLink(jar)) {
      return "is a symbolic link; as root polystack loads no jar through a link (its target"
          + " could be anyone's): copy the jar itself into the directory";
    }
    if (!Files.isRegularFile(jar, LinkOption.NOFOLLOW_LINKS)) {
      return null; // a directory named *.jar and the like are skipped, as without root
    }
    String problem = problem(jar, false);
    return problem == null ? null : problem + FIX;
  }

  /** Null if only root can change {@code path}, else what is wrong (owner or mode). */
  private static String problem(Path path, boolean stickyAllowed) {
    Map<String, Object> a;
    try {
      a = Files.readAttributes(path, "unix:uid,mode", LinkOption.NOFOLLOW_LINKS);
    } catch (IOException | UnsupportedOperationException e) {
      return "cannot be checked (" + e.getMessage() + ")";
    }
    int uid = (Integer) a.get("uid");
    int mode = (Integer) a.get("mode");
    if (uid != 0) {
      return "is owned by uid " + uid + ", not root";
    }
    boolean group = (mode & GROUP_WRITE) != 0;
    boolean others = (mode & OTHER_WRITE) != 0;
    if ((group || others) && !(stickyAllowed && (mode & STICKY) != 0)) {
      return "is writable by " + (group && others ? "group and others" : group ? "its group"
          : "others") + " (mode " + String.format("%04o", mode & 07777) + ")";
    }
    return null;
  }
}
