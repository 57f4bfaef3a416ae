package dev.polystack.host.output;

import dev.polystack.host.sys.Credentials;
import java.io.IOException;
import java.nio.channels.SeekableByteChannel;
import java.nio.file.DirectoryStream;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.NotDirectoryException;
import java.nio.file.OpenOption;
import java.nio.file.Path;
import java.nio.file.SecureDirectoryStream;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.FileAttribute;
import java.nio.file.attribute.PosixFileAttributeView;
import java.nio.file.attribute.PosixFileAttributes;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.nio.file.attribute.UserPrincipalLookupService;
import java.security.SecureRandom;
import java.util.HexFormat;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;

/**
 * How this run writes files: who owns them and with which mode. Every command that writes a
 * file opens it here, so the rules are the same everywhere (docs/operations.md, "Output
 * files"): no symbolic link at the name is followed or written through, an existing regular
 * file is replaced (as perf, py-spy and async-profiler do) by a new inode rather than rewritten,
 * files are {@code 0600} and directories polystack creates {@code 0700}, and under sudo both
 * belong to the invoking user.
 */
public final class Outputs {
  private static final Set<PosixFilePermission> PRIVATE_FILE =
      PosixFilePermissions.fromString("rw-------");
  private static final Set<PosixFilePermission> READABLE_FILE =
      PosixFilePermissions.fromString("rw-r--r--");
  private static final Set<PosixFilePermission> PRIVATE_DIRECTORY =
      PosixFilePermissions.fromString("rwx------");
  private static final SecureRandom RANDOM = new SecureRandom();

  private final Credentials credentials;
  private final Optional<FileOwner> owner;
  private final Path temporaryRoot;
  private final Set<PosixFilePermission> fileMode;

  /** Rules for {@code credentials}, giving files to {@code owner}; scratch space in /tmp. */
  public Outputs(Credentials credentials, Optional<FileOwner> owner) {
    this(credentials, owner, Path.of(System.getProperty("java.io.tmpdir")), PRIVATE_FILE);
  }

  private Outputs(Credentials credentials, Optional<FileOwner> owner, Path temporaryRoot,
      Set<PosixFilePermission> fileMode) {
    this.credentials = Objects.requireNonNull(credentials, "credentials");
    this.owner = Objects.requireNonNull(owner, "owner");
    this.temporaryRoot = Objects.requireNonNull(temporaryRoot, "temporaryRoot");
    this.fileMode = fileMode;
  }

  /**
   * This process's rules: its credentials, the sudo caller from {@code env}, and scratch space
   * in {@code TMPDIR} when that is an absolute path (as mkdtemp(1) does), else /tmp.
   */
  public static Outputs forThisProcess(Map<String, String> env) {
    Credentials credentials = Credentials.ofThisProcess();
    String tmp = env.get("TMPDIR");
    Path root = tmp != null && tmp.startsWith("/") ? Path.of(tmp)
        : Path.of(System.getProperty("java.io.tmpdir"));
    return new Outputs(credentials, FileOwner.sudoCaller(credentials, env), root, PRIVATE_FILE);
  }

  /** The same rules for files that hold nothing private (test expectations): mode 0644. */
  public Outputs readableByAll() {
    return new Outputs(credentials, owner, temporaryRoot, READABLE_FILE);
  }

  /** Who gets the files, if not the user polystack runs as. */
  public Optional<FileOwner> owner() {
    return owner;
  }

  /**
   * Opens {@code file} for a result written at the end: checks the name now (nothing there, or
   * a regular file to replace) and creates the hidden file beside it, so an unwritable place
   * fails before any work, with the system's reason. {@link OutputFile#commit()} puts it in
   * place. {@code option} names the flag in messages ({@code --output}).
   */
  public OutputFile replaceAtEnd(Path file, String option) throws OutputException {
    String label = option + " " + file;
    Path name = fileName(file, label);
    Path directory = directoryOf(file);
    SecureDirectoryStream<Path> dir = openDirectory(directory, label);
    try {
      checkReplaceable(dir, name, label, file);
      return hidden(dir, directory, option, name, "cannot write " + file,
          "; choose another " + option);
    } catch (OutputException e) {
      close(dir);
      throw e;
    }
  }

  /**
   * Like {@link #replaceAtEnd} for a file whose name is known only at the end (a default name
   * with the target's pid): give it to {@link OutputFile#commit(String)}.
   */
  public OutputFile replaceAtEndIn(Path directory, String option) throws OutputException {
    Path absolute = directory.toAbsolutePath();
    SecureDirectoryStream<Path> dir = openDirectory(absolute, option + " (default name)");
    try {
      return hidden(dir, absolute, option, null, "cannot write into " + absolute,
          "; run from a writable directory or give " + option + " FILE");
    } catch (OutputException e) {
      close(dir);
      throw e;
    }
  }

  /**
   * Opens {@code file} for output written as it comes (a trace someone may follow with
   * {@code tail -f}): an existing regular file is unlinked and a new one created at the name
   * with {@code O_EXCL}, or with {@code append} the existing file is opened without following
   * a link, and only if it is the user's (or the sudo caller's) and has no other hard link.
   */
  public OutputFile writeNow(Path file, String option, boolean append) throws OutputException {
    String label = option + " " + file;
    Path name = fileName(file, label);
    Path directory = directoryOf(file);
    SecureDirectoryStream<Path> dir = openDirectory(directory, label);
    try {
      BasicFileAttributes existing = checkReplaceable(dir, name, label, file);
      if (append && existing != null) {
        return appendTo(dir, directory, option, label, name, existing);
      }
      if (existing != null) {
        dir.deleteFile(name);
      }
      SeekableByteChannel channel;
      try {
        channel = dir.newByteChannel(name, Set.of(StandardOpenOption.CREATE_NEW,
            StandardOpenOption.WRITE, LinkOption.NOFOLLOW_LINKS), mode(fileMode));
      } catch (FileAlreadyExistsException e) {
        throw OutputException.failure("cannot write " + file + ": something was created at the"
            + " name while polystack replaced the old file; try again or choose another "
            + option, e);
      }
      OutputFile out = new OutputFile(dir, directory, option, null, name, true, channel);
      try {
        giveToOwner(dir, name);
      } catch (IOException e) {
        out.close();
        throw e;
      }
      return out;
    } catch (IOException e) {
      close(dir);
      throw OutputException.failure("cannot write " + file + ": " + createReason(e)
          + "; choose another " + option, e);
    } catch (OutputException e) {
      close(dir);
      throw e;
    }
  }

  /**
   * A directory to put outputs in: created {@code 0700} (and given to the sudo caller) if
   * missing; if it exists it must be a real directory owned by polystack's user or the sudo
   * caller, since whoever owns it could swap what is written there.
   */
  public Path directory(Path dir, String option) throws OutputException {
    Path absolute = dir.toAbsolutePath().normalize();
    String label = option + " " + dir;
    PosixFileAttributes attributes;
    try {
      attributes = Files.readAttributes(absolute, PosixFileAttributes.class,
          LinkOption.NOFOLLOW_LINKS);
    } catch (NoSuchFileException e) {
      return createDirectory(absolute, label, option);
    } catch (IOException e) {
      throw OutputException.failure("cannot use " + label + ": " + OutputFile.reason(e), e);
    }
    if (attributes.isSymbolicLink()) {
      throw OutputException.usage(label + ": is a symbolic link; polystack writes only into a"
          + " real directory: give the directory it points to");
    }
    if (!attributes.isDirectory()) {
      throw OutputException.usage(label + ": not a directory");
    }
    int uid = ownerUid(absolute);
    if (uid != credentials.euid() && owner.map(o -> o.uid() != uid).orElse(true)) {
      throw OutputException.failure(label + ": owned by uid " + uid + ", not by the user"
          + " polystack writes for; its owner could swap what polystack writes there: give a"
          + " directory you own", null);
    }
    return absolute;
  }

  /**
   * A new directory only this run uses: a random name under {@code TMPDIR} (or /tmp), created
   * {@code 0700} by {@code mkdir} (which never follows a link), given to the sudo caller.
   */
  public Path privateTemporaryDirectory(String prefix) throws OutputException {
    try {
      Path dir = Files.createTempDirectory(temporaryRoot, prefix, mode(PRIVATE_DIRECTORY));
      giveToOwner(dir);
      return dir;
    } catch (IOException e) {
      throw OutputException.failure("cannot create a private directory in " + temporaryRoot
          + ": " + OutputFile.reason(e) + "; set TMPDIR to a writable directory", e);
    }
  }

  private Path createDirectory(Path absolute, String label, String option)
      throws OutputException {
    try {
      if (absolute.getParent() != null) {
        Files.createDirectories(absolute.getParent());
      }
      Files.createDirectory(absolute, mode(PRIVATE_DIRECTORY));
      giveToOwner(absolute);
      return absolute;
    } catch (IOException e) {
      throw OutputException.failure("cannot create " + label + ": " + OutputFile.reason(e)
          + "; choose another " + option, e);
    }
  }

  private OutputFile hidden(SecureDirectoryStream<Path> dir, Path directory, String option,
      Path name, String what, String advice) throws OutputException {
    Path temp = Path.of(".polystack-" + HexFormat.of().formatHex(randomBytes()) + ".tmp");
    SeekableByteChannel channel;
    try {
      channel = dir.newByteChannel(temp, Set.of(StandardOpenOption.CREATE_NEW,
          StandardOpenOption.WRITE, LinkOption.NOFOLLOW_LINKS), mode(fileMode));
    } catch (IOException e) {
      throw OutputException.failure(what + ": " + createReason(e) + advice, e);
    }
    OutputFile out = new OutputFile(dir, directory, option, temp, name, true, channel);
    try {
      giveToOwner(dir, temp);
    } catch (IOException e) {
      out.close();
      throw OutputException.failure(what + ": cannot give it to the sudo caller: "
          + OutputFile.reason(e), e);
    }
    return out;
  }

  private OutputFile appendTo(SecureDirectoryStream<Path> dir, Path directory, String option,
      String label, Path name, BasicFileAttributes before) throws IOException, OutputException {
    // A hard link to another file (which may be root's) at this name would make us append to
    // it; one link is this name alone. Checked by path: the name was just seen as a regular
    // file and its inode is compared again below.
    int uid = ownerUid(directory.resolve(name));
    if (uid != credentials.euid() && owner.map(o -> o.uid() != uid).orElse(true)) {
      throw OutputException.failure(label + ": owned by uid " + uid + "; polystack appends only"
          + " to a file of the user it writes for (another user could read what is appended):"
          + " give a new file or drop --append", null);
    }
    Object links = Files.getAttribute(directory.resolve(name), "unix:nlink",
        LinkOption.NOFOLLOW_LINKS);
    if (!(links instanceof Integer n) || n != 1) {
      throw OutputException.failure(label + ": has " + links + " hard links; polystack appends"
          + " only to a file with no other name (another could be someone else's file): give"
          + " a new file or drop --append", null);
    }
    Set<OpenOption> options = Set.of(StandardOpenOption.WRITE, StandardOpenOption.APPEND,
        LinkOption.NOFOLLOW_LINKS);
    SeekableByteChannel channel = dir.newByteChannel(name, options);
    BasicFileAttributes after = OutputFile.lstat(dir, name);
    if (after == null || !before.fileKey().equals(after.fileKey())) {
      channel.close();
      throw OutputException.failure(label + ": the file was replaced while polystack opened"
          + " it; try again", null);
    }
    return new OutputFile(dir, directory, option, null, name, false, channel);
  }

  /** Refuses what must not be replaced; returns what is there (null for nothing). */
  private static BasicFileAttributes checkReplaceable(SecureDirectoryStream<Path> dir, Path name,
      String label, Path file) throws OutputException {
    BasicFileAttributes a;
    try {
      a = OutputFile.lstat(dir, name);
    } catch (IOException e) {
      throw OutputException.failure("cannot write " + file + ": " + OutputFile.reason(e), e);
    }
    if (a == null || a.isRegularFile()) {
      return a;
    }
    if (a.isSymbolicLink()) {
      throw OutputException.usage(label + ": is a symbolic link; polystack never writes"
          + " through one (as root that could overwrite any file): remove the link or give the"
          + " path it points to");
    }
    if (a.isDirectory()) {
      throw OutputException.usage(label + ": is a directory; give a file name");
    }
    throw OutputException.usage(label + ": not a regular file (a device, FIFO or socket);"
        + " give the name of a file to write");
  }

  private static Path fileName(Path file, String label) throws OutputException {
    Path name = file.getFileName();
    if (name == null || name.toString().equals(".") || name.toString().equals("..")) {
      throw OutputException.usage(label + ": give a file name");
    }
    return name;
  }

  private static Path directoryOf(Path file) {
    Path parent = file.getParent();
    return parent == null ? Path.of("").toAbsolutePath() : parent;
  }

  private static SecureDirectoryStream<Path> openDirectory(Path directory, String label)
      throws OutputException {
    if (Files.exists(directory) && !Files.isDirectory(directory)) {
      // Checked first: the JDK opens the directory without O_DIRECTORY, and a FIFO would block.
      throw OutputException.usage(label + ": " + directory + " is not a directory");
    }
    DirectoryStream<Path> stream;
    try {
      stream = Files.newDirectoryStream(directory);
    } catch (NoSuchFileException e) {
      throw OutputException.usage(label + ": directory " + directory + " does not exist");
    } catch (NotDirectoryException e) {
      throw OutputException.usage(label + ": " + directory + " is not a directory");
    } catch (IOException e) {
      throw OutputException.failure("cannot write into " + directory + ": "
          + OutputFile.reason(e) + "; choose another " + label, e);
    }
    if (stream instanceof SecureDirectoryStream<Path> secure) {
      return secure;
    }
    close(stream);
    throw OutputException.failure("cannot write into " + directory + ": its file system offers"
        + " no descriptor-relative operations (openat), which polystack needs to write safely",
        null);
  }

  private void giveToOwner(SecureDirectoryStream<Path> dir, Path name) throws IOException {
    if (owner.isPresent()) {
      chown(dir.getFileAttributeView(name, PosixFileAttributeView.class,
          LinkOption.NOFOLLOW_LINKS));
    }
  }

  private void giveToOwner(Path path) throws IOException {
    if (owner.isPresent()) {
      chown(Files.getFileAttributeView(path, PosixFileAttributeView.class,
          LinkOption.NOFOLLOW_LINKS));
    }
  }

  private void chown(PosixFileAttributeView view) throws IOException {
    FileOwner o = owner.orElseThrow();
    // The JDK has no chown by number; a name that no account has is taken as the number itself
    // (UnixUserPrincipals), and Debian's useradd allows no all-digit account names.
    UserPrincipalLookupService lookup = FileSystems.getDefault().getUserPrincipalLookupService();
    view.setOwner(lookup.lookupPrincipalByName(Integer.toString(o.uid())));
    view.setGroup(lookup.lookupPrincipalByGroupName(Integer.toString(o.gid())));
  }

  private static int ownerUid(Path path) throws OutputException {
    try {
      return (Integer) Files.getAttribute(path, "unix:uid", LinkOption.NOFOLLOW_LINKS);
    } catch (IOException e) {
      throw OutputException.failure("cannot use " + path + ": " + OutputFile.reason(e), e);
    }
  }

  /**
   * The reason a file could not be created in a directory that exists: ENOENT there means the
   * file system makes no new files (/proc, /sys), which its bare words do not say.
   */
  private static String createReason(IOException e) {
    String reason = OutputFile.reason(e);
    return e instanceof NoSuchFileException
        ? reason + " (its file system does not create files there)" : reason;
  }

  private static FileAttribute<Set<PosixFilePermission>> mode(Set<PosixFilePermission> mode) {
    return PosixFilePermissions.asFileAttribute(mode);
  }

  private static byte[] randomBytes() {
    byte[] b = new byte[8];
    RANDOM.nextBytes(b);
    return b;
  }

  private static void close(DirectoryStream<Path> stream) {
    try {
      stream.close();
    } catch (IOException ignored) {
      // Nothing was done through it.
    }
  }
}
