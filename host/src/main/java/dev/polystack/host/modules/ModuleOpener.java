package dev.polystack.host.modules;

import dev.polystack.host.elf.ElfFile;
import dev.polystack.host.elf.ElfParseException;
import dev.polystack.host.elf.ElfSource;
import dev.polystack.host.memory.RemoteMemory;
import dev.polystack.host.memory.RemoteReadException;
import dev.polystack.host.proc.DeviceNumber;
import dev.polystack.host.proc.MappedModule;
import dev.polystack.host.proc.MemoryMapping;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Opens the ELF file behind a mapping the way the target sees it and proves it is the mapped
 * file: through /proc/PID/map_files (the mapped inode itself, even when deleted or replaced on
 * disk), else through /proc/PID/root (the target's mount namespace, not ours), and in both cases
 * checks device and inode against the mapping. Parsed files are cached by identity, bounded.
 */
public final class ModuleOpener implements ModuleSource {
  static final int MAX_CACHED_FILES = 512;

  /** The vDSO is one or two pages; anything bigger in its place is not a vDSO. */
  static final int MAX_VDSO_SIZE = 64 << 10;

  private record Identity(DeviceNumber device, long inode, String path) {}

  private final Path procRoot;
  private final Map<Identity, ElfFile> cache =
      new LinkedHashMap<>(64, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<Identity, ElfFile> eldest) {
          return size() > MAX_CACHED_FILES;
        }
      };

  public ModuleOpener() {
    this(Path.of("/proc"));
  }

  ModuleOpener(Path procRoot) {
    this.procRoot = procRoot;
  }

  /** Opens a mapped file of process {@code pid}. */
  @Override
  public synchronized ElfFile open(int pid, MappedModule module) throws ModuleOpenException {
    Identity id = new Identity(module.device(), module.inode(), module.path());
    ElfFile cached = cache.get(id);
    if (cached != null) {
      return cached;
    }
    MemoryMapping first = module.mappings().get(0);
    Path viaMapFiles = procRoot.resolve(Integer.toString(pid)).resolve("map_files")
        .resolve(Long.toHexString(first.start()) + "-" + Long.toHexString(first.end()));
    Path viaRoot = procRoot.resolve(Integer.toString(pid)).resolve("root")
        .resolve(module.path().replaceFirst("^/+", ""));
    ModuleOpenException last = null;
    for (Path candidate : new Path[] {viaMapFiles, viaRoot}) {
      try {
        verifyIdentity(candidate, module);
        ElfFile elf = ElfFile.open(ElfSource.ofFile(candidate));
        cache.put(id, elf);
        return elf;
      } catch (ModuleOpenException e) {
        last = e;
        if (e.reason().equals("not_elf") || e.reason().equals("replaced")) {
          break;
        }
      } catch (ElfParseException e) {
        throw new ModuleOpenException("not_elf", module.path() + ": " + e.getMessage());
      }
    }
    throw last;
  }

  /** Reads and parses the vDSO of {@code pid} from its memory (it has no file). */
  @Override
  public ElfFile openVdso(MemoryMapping vdso, RemoteMemory memory) throws ModuleOpenException {
    return vdso(vdso, memory);
  }

  /** The vDSO image read from {@code memory}; shared with snapshot replay. */
  public static ElfFile vdso(MemoryMapping vdso, RemoteMemory memory)
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
    try {
      return ElfFile.open(ElfSource.ofImage(image, vdso.start(), "[vdso]"));
    } catch (ElfParseException e) {
      throw new ModuleOpenException("not_elf", "[vdso]: " + e.getMessage());
    }
  }

  private static void verifyIdentity(Path file, MappedModule module) throws ModuleOpenException {
    Map<String, Object> attrs;
    try {
      // map_files entries are magic links to the mapped inode itself; stat through them. Any
      // other path is only trusted if it leads to the mapped device and inode.
      attrs = Files.readAttributes(file, "unix:dev,ino");
    } catch (IOException | UnsupportedOperationException | SecurityException e) {
      throw new ModuleOpenException("unreadable", module.path() + ": cannot open " + file + " ("
          + e.getMessage() + ")");
    }
    long inode = (Long) attrs.get("ino");
    long dev = (Long) attrs.get("dev");
    DeviceNumber device = new DeviceNumber(major(dev), minor(dev));
    if (inode != module.inode() || !device.equals(module.device())) {
      throw new ModuleOpenException("replaced", module.path() + " on disk (dev " + device
          + ", inode " + inode + ") is not the mapped file (dev " + module.device() + ", inode "
          + module.inode() + "): it was replaced after the process mapped it");
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
