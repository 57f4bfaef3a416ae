package dev.polystack.host.modules;

import dev.polystack.host.elf.BuildId;
import dev.polystack.host.elf.DebugLink;
import dev.polystack.host.elf.ElfFile;
import dev.polystack.host.elf.ElfParseException;
import dev.polystack.host.elf.ElfSource;
import dev.polystack.host.sys.Errno;
import dev.polystack.host.sys.SyscallException;
import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.function.Consumer;
import java.util.zip.CRC32;

/**
 * Separate debug files of a stripped module, looked up where gdb looks (
 * /usr/lib/debug/.build-id/xx/rest.debug, then the .gnu_debuglink name next to the module, in
 * its .debug directory and under /usr/lib/debug), with the target's choices distrusted: every
 * candidate is resolved inside the target's root directory with no symlink in any component,
 * opened with O_PATH and reopened for reading only when it is a regular file, and accepted only
 * when its build id equals the module's or its CRC32 equals the one in the module's
 * .gnu_debuglink. A stripped library cannot make polystack, running as root, label frames with
 * the symbols of a file the target itself could not read (docs/reliability.md, "Root safety").
 */
public final class DebugFiles {
  /** Where distributions install separate debug files, relative to a root directory. */
  static final String DEBUG_DIR = "usr/lib/debug";

  /** Why a candidate that exists was not used; counted as {@code debug_file_<reason>}. */
  public static final String SYMLINK = "symlink";
  public static final String NOT_REGULAR = "not_regular";
  public static final String MISMATCH = "mismatch";
  public static final String UNREADABLE = "unreadable";

  private static final int CRC_CHUNK = 1 << 16;

  private final Path root;
  private final ParsedDebugFiles parsed;

  /** @param root the target's root directory: /proc/PID/root live, "/" for a replay */
  public DebugFiles(Path root) {
    this(root, new ParsedDebugFiles(4));
  }

  /** Lookups inside {@code root} that reuse the debug files {@code parsed} holds. */
  DebugFiles(Path root, ParsedDebugFiles parsed) {
    this.root = Objects.requireNonNull(root, "root");
    this.parsed = Objects.requireNonNull(parsed, "parsed");
  }

  /**
   * The verified debug file of {@code module} (mapped from {@code modulePath} as the target sees
   * it), or empty; each existing candidate that was refused is reported to {@code refused} with
   * one of the reasons above.
   */
  public Optional<ElfFile> find(ElfFile module, String modulePath, Consumer<String> refused) {
    Optional<BuildId> id;
    Optional<DebugLink> link;
    try {
      id = module.buildId();
      link = module.debugLink();
    } catch (ElfParseException e) {
      return Optional.empty();
    }
    for (String candidate : candidates(id, link, modulePath)) {
      Optional<ElfFile> debug = open(candidate, id, link, refused);
      if (debug.isPresent()) {
        return debug;
      }
    }
    return Optional.empty();
  }

  /** Candidate paths inside the root, without a leading '/'. */
  static List<String> candidates(Optional<BuildId> id, Optional<DebugLink> link,
      String modulePath) {
    List<String> out = new ArrayList<>();
    if (id.isPresent() && id.get().hex().length() > 2) {
      String hex = id.get().hex();
      out.add(DEBUG_DIR + "/.build-id/" + hex.substring(0, 2) + "/" + hex.substring(2)
          + ".debug");
    }
    if (link.isPresent() && modulePath.startsWith("/")) {
      String name = link.get().fileName();
      int slash = modulePath.lastIndexOf('/');
      String dir = modulePath.substring(1, slash); // "" for a module in "/"
      String prefix = dir.isEmpty() ? "" : dir + "/";
      if (plainName(name)) {
        out.add(prefix + name);
        out.add(prefix + ".debug/" + name);
        out.add(DEBUG_DIR + "/" + prefix + name);
      }
    }
    return out;
  }

  /** A single path component: the link names a file, never a way elsewhere. */
  private static boolean plainName(String name) {
    return !name.isEmpty() && !name.equals(".") && !name.equals("..") && name.indexOf('/') < 0
        && name.indexOf('\0') < 0;
  }

  private Optional<ElfFile> open(String candidate, Optional<BuildId> id,
      Optional<DebugLink> link, Consumer<String> refused) {
    String where = root + "/" + candidate;
    try (OpenedFile file = OpenedFile.openInRootNoSymlinks(root, candidate)) {
      OpenedFile.Identity identity = file.identity();
      if (!identity.regular()) {
        refused.accept(NOT_REGULAR);
        return Optional.empty();
      }
      ParsedDebugFiles.Key key = new ParsedDebugFiles.Key(identity.dev(), identity.inode());
      ParsedDebugFiles.Parsed known = parsed.get(key);
      if (known != null) {
        return verified(known, id, link, refused);
      }
      FileChannel channel = FileChannel.open(file.path(), StandardOpenOption.READ);
      boolean keep = false;
      try {
        ParsedDebugFiles.Parsed fresh =
            new ParsedDebugFiles.Parsed(ElfFile.open(ElfSource.ofChannel(channel, where)));
        Optional<ElfFile> debug = verified(fresh, id, link, refused);
        keep = true; // parsed files stay open while cached or in use
        parsed.put(key, fresh);
        return debug;
      } finally {
        if (!keep) {
          channel.close();
        }
      }
    } catch (SyscallException e) {
      if (e.errno() == Errno.ENOENT || e.errno() == Errno.ENOTDIR) {
        return Optional.empty(); // no such candidate: the usual case
      }
      refused.accept(e.errno() == Errno.ELOOP ? SYMLINK : UNREADABLE);
      return Optional.empty();
    } catch (IOException | ElfParseException | SecurityException e) {
      refused.accept(UNREADABLE);
      return Optional.empty();
    }
  }

  /** {@code candidate} when it is the module's debug file (same build, or same CRC32). */
  private static Optional<ElfFile> verified(ParsedDebugFiles.Parsed candidate,
      Optional<BuildId> id, Optional<DebugLink> link, Consumer<String> refused)
      throws ElfParseException, IOException {
    if (!sameBuild(id, candidate.elf) && !sameCrc(link, candidate)) {
      refused.accept(MISMATCH);
      return Optional.empty();
    }
    if (candidate.elf.staticSymbols().isEmpty()) {
      return Optional.empty(); // the right file, but stripped too
    }
    return Optional.of(candidate.elf);
  }

  private static boolean sameBuild(Optional<BuildId> id, ElfFile debug)
      throws ElfParseException {
    return id.isPresent() && id.equals(debug.buildId());
  }

  /** CRC32 of the whole candidate equals the one the module's .gnu_debuglink records. */
  private static boolean sameCrc(Optional<DebugLink> link, ParsedDebugFiles.Parsed candidate)
      throws IOException {
    if (link.isEmpty()) {
      return false;
    }
    OptionalLong known = candidate.crc();
    if (known.isEmpty()) {
      OptionalLong computed = crc32(candidate.elf.source());
      if (computed.isEmpty()) {
        return false;
      }
      candidate.crc(computed.getAsLong());
      known = computed;
    }
    return known.getAsLong() == link.get().crc32Unsigned();
  }

  /** CRC32 of a whole file, or empty when it shrank while read. */
  private static OptionalLong crc32(ElfSource source) throws IOException {
    CRC32 crc = new CRC32();
    byte[] chunk = new byte[CRC_CHUNK];
    long size = source.size();
    for (long off = 0; off < size; ) {
      int n = source.read(off, chunk, 0, (int) Math.min(chunk.length, size - off));
      if (n <= 0) {
        return OptionalLong.empty();
      }
      crc.update(chunk, 0, n);
      off += n;
    }
    return OptionalLong.of(crc.getValue());
  }
}
