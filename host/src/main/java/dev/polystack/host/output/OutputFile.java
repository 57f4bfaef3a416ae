package dev.polystack.host.output;

import java.io.BufferedOutputStream;
import java.io.Closeable;
import java.io.FilterOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.channels.Channels;
import java.nio.channels.FileChannel;
import java.nio.channels.SeekableByteChannel;
import java.nio.file.AccessDeniedException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.FileSystemException;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.NotDirectoryException;
import java.nio.file.Path;
import java.nio.file.SecureDirectoryStream;
import java.nio.file.attribute.BasicFileAttributeView;
import java.nio.file.attribute.BasicFileAttributes;

/**
 * One file polystack is writing. Everything goes through a descriptor of its directory
 * ({@code openat}, {@code renameat}, {@code unlinkat}), never through the path again, and no
 * symbolic link at the name is ever followed: a file is either built under a fresh hidden name
 * ({@code O_CREAT|O_EXCL}) and renamed over the name at {@link #commit}, or, for outputs
 * written while a session runs, created fresh at the name after the old entry is unlinked. So
 * a link or hard link planted at a predictable name is replaced, never written through.
 * Made by {@link Outputs}; rules in docs/operations.md, "Output files".
 */
public final class OutputFile implements Closeable {
  private final SecureDirectoryStream<Path> dir;
  private final Path directory;
  /** The flag that named the file ({@code --output}), for messages; may be null. */
  private final String option;
  /** The hidden name written until {@link #commit}; null when writing at the name itself. */
  private final Path temp;
  private final boolean createdFresh;
  private final SeekableByteChannel channel;
  private Path name;
  private OutputStream stream;
  private long written;
  private boolean finished;

  OutputFile(SecureDirectoryStream<Path> dir, Path directory, String option, Path temp, Path name,
      boolean createdFresh, SeekableByteChannel channel) {
    this.dir = dir;
    this.directory = directory;
    this.option = option;
    this.temp = temp;
    this.name = name;
    this.createdFresh = createdFresh;
    this.channel = channel;
  }

  /**
   * Where to write: buffered; closing it only flushes (the file itself is closed by
   * {@link #commit} or {@link #close}), so writers that close their stream are fine.
   */
  public OutputStream stream() {
    if (stream == null) {
      OutputStream raw = Channels.newOutputStream(channel);
      stream = new BufferedOutputStream(new FilterOutputStream(raw) {
        @Override
        public void write(byte[] b, int off, int len) throws IOException {
          out.write(b, off, len);
          written += len;
        }

        @Override
        public void write(int b) throws IOException {
          out.write(b);
          written++;
        }

        @Override
        public void close() throws IOException {
          flush();
        }
      }, 1 << 16);
    }
    return stream;
  }

  /** The path the data ends up at (null while a default name is still to be chosen). */
  public Path path() {
    return name == null ? null : directory.resolve(name);
  }

  /** Finishes a file whose name was given when it was opened. */
  public Path commit() throws OutputException {
    if (name == null) {
      throw new IllegalStateException("no file name yet: use commit(String)");
    }
    return commit(name.toString());
  }

  /**
   * Flushes, syncs and closes the file and, if it was built under a hidden name, renames it
   * over {@code fileName} in its directory (replacing a file or link there, never following
   * one). If the rename fails the data stays under the hidden name, which the message gives.
   */
  public Path commit(String fileName) throws OutputException {
    if (finished) {
      throw new IllegalStateException("already finished");
    }
    Path target = Path.of(fileName);
    if (target.getNameCount() != 1 || fileName.equals(".") || fileName.equals("..")) {
      throw new IllegalArgumentException("not a file name: " + fileName);
    }
    if (name != null && !name.equals(target)) {
      throw new IllegalStateException("opened for " + name + ", not " + fileName);
    }
    name = target;
    Path where = directory.resolve(target);
    finished = true;
    try {
      if (stream != null) {
        stream.flush();
      }
      if (temp != null && channel instanceof FileChannel file) {
        // A replaced profile must not become an empty file after a crash right after the rename.
        file.force(true);
      }
      channel.close();
    } catch (IOException e) {
      quietlyDelete();
      closeDirectory();
      throw OutputException.failure("cannot write " + where + ": " + reason(e) + retry(), e);
    }
    if (temp != null) {
      try {
        dir.move(temp, dir, target);
      } catch (IOException e) {
        closeDirectory();
        throw OutputException.failure("cannot write " + where + ": " + reason(e)
            + "; the data was kept in " + directory.resolve(temp), e);
      }
    }
    closeDirectory();
    return where;
  }

  /**
   * Ends a file that was not committed: a hidden one is deleted, a fresh one that received
   * nothing is deleted, anything else (an appended file, a partly written trace) is kept.
   */
  @Override
  public void close() {
    if (finished) {
      return;
    }
    finished = true;
    try {
      if (stream != null) {
        stream.flush();
      }
    } catch (IOException ignored) {
      // The file is being abandoned; the write error was or will be reported by its writer.
    }
    try {
      channel.close();
    } catch (IOException ignored) {
      // Same: nothing more can be done with it.
    }
    if (temp != null || (createdFresh && written == 0)) {
      quietlyDelete();
    }
    closeDirectory();
  }

  private void quietlyDelete() {
    try {
      dir.deleteFile(temp != null ? temp : name);
    } catch (IOException ignored) {
      // Already gone, or the directory became unwritable: a stray hidden file is all it costs.
    }
  }

  private void closeDirectory() {
    try {
      dir.close();
    } catch (IOException ignored) {
      // A directory descriptor that fails to close leaks nothing we can act on.
    }
  }

  private String retry() {
    return option == null ? "" : "; choose another " + option;
  }

  /** What {@code name} is in {@code dir} without following a link; null if nothing is there. */
  static BasicFileAttributes lstat(SecureDirectoryStream<Path> dir, Path name)
      throws IOException {
    try {
      return dir.getFileAttributeView(name, BasicFileAttributeView.class,
          LinkOption.NOFOLLOW_LINKS).readAttributes();
    } catch (NoSuchFileException e) {
      return null;
    }
  }

  /**
   * The system's reason in its own words ({@code Permission denied}, {@code Read-only file
   * system}): NIO gives some errors as exception types with no text.
   */
  public static String reason(IOException e) {
    if (e instanceof AccessDeniedException) {
      return "Permission denied";
    }
    if (e instanceof NoSuchFileException) {
      return "No such file or directory";
    }
    if (e instanceof FileAlreadyExistsException) {
      return "File exists";
    }
    if (e instanceof NotDirectoryException) {
      return "Not a directory";
    }
    if (e instanceof FileSystemException fs && fs.getReason() != null) {
      return fs.getReason();
    }
    return e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage();
  }
}
