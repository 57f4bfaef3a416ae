package dev.polystack.host.snapshot;

import dev.polystack.host.elf.ElfFile;
import dev.polystack.host.elf.ElfParseException;
import dev.polystack.host.elf.ElfSource;
import dev.polystack.host.memory.ProcessMemory;
import dev.polystack.host.modules.DebugFiles;
import dev.polystack.host.modules.ModuleOpenException;
import dev.polystack.host.modules.ModuleOpener;
import dev.polystack.host.modules.ModuleSource;
import dev.polystack.host.proc.MappedFile;
import dev.polystack.host.proc.MemoryMapping;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.zip.GZIPInputStream;

/**
 * Module files for a replay, found by content: embedded in the snapshot, else in a module
 * directory as {@code <sha256>} or {@code <sha256>.gz}, else at the recorded path; every
 * candidate is verified by size and SHA-256. A module the walk needed and that is found nowhere
 * is an error naming its build id and every place looked; an unneeded one is skipped.
 */
public final class SnapshotModules implements ModuleSource {
  /** Marks the open failure of a module the snapshot deliberately left out. */
  public static final String NOT_RECORDED = "not_recorded";

  private final Map<String, ElfFile> byPath = new HashMap<>();
  private final Map<String, String> missing = new HashMap<>();

  private SnapshotModules() {}

  /** Resolves every module of {@code snapshot}; fails on the first needed one not found. */
  public static SnapshotModules resolve(Snapshot snapshot, List<Path> moduleDirs)
      throws SnapshotException {
    SnapshotModules out = new SnapshotModules();
    for (Snapshot.ModuleRef ref : snapshot.modules()) {
      List<String> looked = new ArrayList<>();
      byte[] bytes = find(ref, moduleDirs, looked);
      if (bytes == null) {
        String why = "module " + ref.path() + " (build id "
            + (ref.buildId().isEmpty() ? "none" : ref.buildId()) + ", sha256 " + ref.sha256()
            + ") not found: looked in " + String.join(", ", looked);
        if (ref.needed()) {
          throw new SnapshotException(why
              + "; pass --modules DIR or record with --embed-modules");
        }
        out.missing.put(ref.path(), why);
        continue;
      }
      try {
        out.byPath.put(ref.path(), ElfFile.open(ElfSource.ofFileBytes(bytes, ref.path())));
      } catch (ElfParseException e) {
        throw new SnapshotException("module " + ref.path() + ": " + e.getMessage());
      }
    }
    return out;
  }

  private static byte[] find(Snapshot.ModuleRef ref, List<Path> dirs, List<String> looked) {
    if (ref.embedded()) {
      if (matches(ref, ref.bytes())) {
        return ref.bytes();
      }
      looked.add("the snapshot (embedded copy corrupt)");
    } else {
      looked.add("the snapshot (not embedded)");
    }
    for (Path dir : dirs) {
      for (String name : new String[] {ref.sha256(), ref.sha256() + ".gz"}) {
        Path candidate = dir.resolve(name);
        looked.add(candidate.toString());
        byte[] b = load(candidate, ref.size());
        if (b != null && matches(ref, b)) {
          return b;
        }
      }
    }
    Path original = Path.of(ref.path());
    looked.add(ref.path());
    byte[] b = original.isAbsolute() ? load(original, ref.size()) : null;
    return b != null && matches(ref, b) ? b : null;
  }

  /** The file's bytes (gunzipped for {@code .gz}) if it exists and has the expected size. */
  private static byte[] load(Path file, long size) {
    try {
      if (!Files.isRegularFile(file)) {
        return null;
      }
      if (!file.getFileName().toString().endsWith(".gz")) {
        return Files.size(file) == size ? Files.readAllBytes(file) : null;
      }
      try (InputStream in = new GZIPInputStream(Files.newInputStream(file))) {
        byte[] b = in.readNBytes((int) Math.min(size + 1, Integer.MAX_VALUE - 8));
        return b.length == size ? b : null;
      }
    } catch (IOException | SecurityException e) {
      return null;
    }
  }

  private static boolean matches(Snapshot.ModuleRef ref, byte[] bytes) {
    return bytes.length == ref.size() && sha256(bytes).equals(ref.sha256());
  }

  public static String sha256(byte[] bytes) {
    try {
      return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("the JDK has no SHA-256", e);
    }
  }

  /** Paths of unneeded modules that were found nowhere (replay goes on without them). */
  public java.util.Set<String> omitted() {
    return missing.keySet();
  }

  @Override
  public ElfFile open(int pid, MappedFile module) throws ModuleOpenException {
    ElfFile elf = byPath.get(module.path());
    if (elf != null) {
      return elf;
    }
    String why = missing.get(module.path());
    throw new ModuleOpenException(NOT_RECORDED, why != null ? why
        : module.path() + " is not in the snapshot");
  }

  /**
   * A replay looks for debug files in this machine's root (the recorded process is gone), with
   * the same checks: no symlinks, matching build id or CRC32.
   */
  @Override
  public DebugFiles debugFiles(int pid) {
    return new DebugFiles(Path.of("/"));
  }

  @Override
  public ElfFile openVdso(MemoryMapping vdso, ProcessMemory memory) throws ModuleOpenException {
    return ModuleOpener.vdso(vdso, memory);
  }
}
