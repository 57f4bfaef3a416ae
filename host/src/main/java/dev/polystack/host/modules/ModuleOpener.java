package dev.polystack.host.modules;

import dev.polystack.host.cache.BoundedMap;
import dev.polystack.host.elf.ElfFile;
import dev.polystack.host.elf.ElfParseException;
import dev.polystack.host.elf.ElfSource;
import dev.polystack.host.memory.ProcessMemory;
import dev.polystack.host.memory.RemoteReadException;
import dev.polystack.host.proc.DeviceNumber;
import dev.polystack.host.proc.MappedFile;
import dev.polystack.host.proc.MemoryMapping;
import dev.polystack.host.sys.DescriptorLimit;
import dev.polystack.host.sys.SyscallException;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Map;
import java.util.OptionalLong;

/**
 * Opens the ELF file behind a mapping the way the target sees it and proves it is the mapped
 * file: through /proc/PID/map_files (the mapped inode itself, even when deleted or replaced on
 * disk), else, for a file not deleted, through /proc/PID/root (the target's mount namespace, not
 * ours; resolved inside that root, see {@link OpenedFile}). Both open with O_PATH, check type,
 * device and inode of that descriptor against the mapping, and only then reopen it for reading.
 * Parsed files, and the separate debug files found for them, are cached by identity, bounded.
 */
public final class ModuleOpener implements ModuleSource {
  static final int MAX_CACHED_FILES = 512;
  /**
   * Each cached file holds a descriptor, and the opener keeps two caches (modules and debug
   * files): together at most half of the descriptor limit, the rest for the processes' own
   * modules, perf events, sockets and the JVM.
   */
  static final int LIMIT_SHARE_PER_CACHE = 4;

  /** The vDSO is one or two pages; anything bigger in its place is not a vDSO. */
  static final int MAX_VDSO_SIZE = 64 << 10;

  private final Path procRoot;
  private final Map<MappedFile.Identity, ElfFile> cache;
  /** Separate debug files, parsed once for every process whose stripped modules use them. */
  private final ParsedDebugFiles debugFiles;
  /** The last vDSO parsed, and its bytes: the kernel maps the same image into every process. */
  private byte[] vdsoImage;
  private ElfFile vdsoFile;

  public ModuleOpener() {
    this(Path.of("/proc"), cachedFilesWithin(DescriptorLimit.softLimit()));
  }

  /** {@link #MAX_CACHED_FILES}, or a quarter of a lower descriptor limit. */
  static int cachedFilesWithin(OptionalLong descriptorLimit) {
    return (int) Math.max(1, Math.min(MAX_CACHED_FILES,
        descriptorLimit.orElse(Long.MAX_VALUE) / LIMIT_SHARE_PER_CACHE));
  }

  /**
   * An opener that keeps at most {@code maxCachedFiles} parsed files beyond those processes hold
   * (the host-wide agent keeps few: a parsed libjvm.so alone holds tens of thousands of symbols).
   */
  public ModuleOpener(int maxCachedFiles) {
    this(Path.of("/proc"), maxCachedFiles);
  }

  ModuleOpener(Path procRoot) {
    this(procRoot, MAX_CACHED_FILES);
  }

  private ModuleOpener(Path procRoot, int maxCachedFiles) {
    this.procRoot = procRoot;
    this.debugFiles = new ParsedDebugFiles(maxCachedFiles);
    this.cache = BoundedMap.leastRecentlyUsed(maxCachedFiles);
  }

  /** Opens a mapped file of process {@code pid}. */
  @Override
  public synchronized ElfFile open(int pid, MappedFile module) throws ModuleOpenException {
    MappedFile.Identity id = module.identity();
    ElfFile cached = cache.get(id);
    if (cached != null) {
      return cached;
    }
    MemoryMapping first = module.mappings().get(0);
    Path pidDir = procRoot.resolve(Integer.toString(pid));
    Path viaMapFiles = pidDir.resolve("map_files")
        .resolve(Long.toHexString(first.start()) + "-" + Long.toHexString(first.end()));
    ModuleOpenException last;
    try {
      ElfFile elf = parse(() -> OpenedFile.open(viaMapFiles), viaMapFiles.toString(), module);
      cache.put(id, elf);
      return elf;
    } catch (ModuleOpenException e) {
      if (e.reason().equals("not_elf") || e.reason().equals("replaced")) {
        throw e;
      }
      last = e;
    }
    // The path of a deleted file names something else now, or nothing: only map_files reaches
    // the mapped inode.
    if (module.deleted()) {
      throw new ModuleOpenException("deleted", module.path() + " was deleted after the process"
          + " mapped it, and " + viaMapFiles + " cannot be opened (" + last.getMessage()
          + "; it needs CAP_SYS_ADMIN or CAP_CHECKPOINT_RESTORE)");
    }
    // map_files needs CAP_SYS_ADMIN on some kernels; the path as the target sees it, resolved
    // by the kernel inside the target's root so no symlink can lead out of it.
    Path root = pidDir.resolve("root");
    String inRoot = module.path().replaceFirst("^/+", "");
    if (inRoot.isEmpty()) {
      throw last;
    }
    ElfFile elf = parse(() -> OpenedFile.openInRoot(root, inRoot), root + "/" + inRoot, module);
    cache.put(id, elf);
    return elf;
  }

  private interface Opener {
    OpenedFile open() throws SyscallException;
  }

  /**
   * Opens once (O_PATH), checks the open descriptor's identity against the mapping and parses
   * through a reopen of that same descriptor: a file swapped in after the check is never read,
   * and nothing that is not the mapped regular file is ever opened for reading.
   */
  private static ElfFile parse(Opener opener, String where, MappedFile module)
      throws ModuleOpenException {
    try (OpenedFile file = opener.open()) {
      verifyIdentity(file, where, module);
      return ElfFile.open(ElfSource.ofFile(file.path(), module.path()));
    } catch (SyscallException e) {
      throw new ModuleOpenException("unreadable", module.path() + ": cannot open " + where
          + " (" + e.getMessage() + ")");
    } catch (ElfParseException e) {
      throw new ModuleOpenException("not_elf", module.path() + ": " + e.getMessage());
    }
  }

  /** Debug files of process {@code pid}'s modules, looked up inside its root directory. */
  @Override
  public DebugFiles debugFiles(int pid) {
    return new DebugFiles(procRoot.resolve(Integer.toString(pid)).resolve("root"), debugFiles);
  }

  /**
   * Reads the vDSO of {@code pid} from its memory (it has no file) and parses it, or returns the
   * file parsed for another process when the bytes are the same. The parse does not depend on
   * where a process maps the image (the kernel's vDSO is never relocated), so callers take the
   * bias from the mapping ({@code start - imageStartAddress()}), never from {@code loadBias()}.
   */
  @Override
  public synchronized ElfFile openVdso(MemoryMapping vdso, ProcessMemory memory)
      throws ModuleOpenException {
    byte[] image = vdsoImage(vdso, memory);
    if (vdsoFile == null || !Arrays.equals(image, vdsoImage)) {
      vdsoFile = parseVdso(vdso, image);
      vdsoImage = image;
    }
    return vdsoFile;
  }

  /** The vDSO image read from {@code memory}; shared with snapshot replay. */
  public static ElfFile vdso(MemoryMapping vdso, ProcessMemory memory)
      throws ModuleOpenException {
    return parseVdso(vdso, vdsoImage(vdso, memory));
  }

  private static byte[] vdsoImage(MemoryMapping vdso, ProcessMemory memory)
      throws ModuleOpenException {
    long size = vdso.end() - vdso.start();
    if (size <= 0 || size > MAX_VDSO_SIZE) {
      throw new ModuleOpenException("bad_vdso", "[vdso] mapping of " + size + " bytes");
    }
    byte[] image = new byte[(int) size];
    try {
      memory.readFully(vdso.start(), image, 0, image.length);
    } catch (RemoteReadException e) {
      throw new ModuleOpenException("unreadable", "[vdso]: " + e.getMessage());
    }
    return image;
  }

  private static ElfFile parseVdso(MemoryMapping vdso, byte[] image)
      throws ModuleOpenException {
    try {
      return ElfFile.open(ElfSource.ofImage(image, vdso.start(), "[vdso]"));
    } catch (ElfParseException e) {
      throw new ModuleOpenException("not_elf", "[vdso]: " + e.getMessage());
    }
  }

  private static void verifyIdentity(OpenedFile file, String where, MappedFile module)
      throws ModuleOpenException {
    OpenedFile.Identity id;
    try {
      id = file.identity();
    } catch (IOException | UnsupportedOperationException | SecurityException e) {
      throw new ModuleOpenException("unreadable", module.path() + ": cannot stat " + where
          + " (" + e.getMessage() + ")");
    }
    DeviceNumber device = new DeviceNumber(major(id.dev()), minor(id.dev()));
    if (!id.regular() || id.inode() != module.inode() || !device.equals(module.device())) {
      throw new ModuleOpenException("replaced", module.path() + " on disk (dev " + device
          + ", inode " + id.inode() + (id.regular() ? "" : ", not a regular file")
          + ") is not the mapped file (dev " + module.device() + ", inode " + module.inode()
          + "): it was replaced after the process mapped it");
    }
  }

  // glibc's gnu_dev_major/gnu_dev_minor: the kernel's 64-bit st_dev encoding.
  static int major(long dev) {
    return (int) (((dev >>> 8) & 0xfff) | ((dev >>> 32) & ~0xfffL));
  }

  static int minor(long dev) {
    return (int) ((dev & 0xff) | ((dev >>> 12) & ~0xffL));
  }
}
