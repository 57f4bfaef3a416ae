package dev.polystack.host.process;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.polystack.host.elf.ElfFile;
import dev.polystack.host.memory.ProcessMemory;
import dev.polystack.host.modules.DebugFiles;
import dev.polystack.host.modules.ModuleOpener;
import dev.polystack.host.plugins.PluginGuard;
import dev.polystack.host.plugins.PluginRegistry;
import dev.polystack.host.proc.ProcFs;
import dev.polystack.host.testutil.BlockedWriter;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Separate debug files of a real stripped library loaded by a real process, looked up by the
 * host as root (issue 20, "target-chosen debug files"). The attacker's strongest position is
 * modelled: the library's .gnu_debuglink names a file in the target's own directory, which is a
 * symlink to a root-only ELF (mode 0600 in a 0700 directory) built from the same code with
 * other function names and the same build id, so nothing but the no-symlink rule stands between
 * that file and frame names.
 */
class DebugFileSymbolsTest {
  private static final String BUILD_ID = "0123456789abcdef0123456789abcdef01234567";
  /** Sources in host/src/test/resources/native, see source(). */
  private static final String LIB = "dlopen_victim.c";
  private static final String MAIN = "dlopen_main.c";

  @TempDir Path dir;
  private Process target;

  @AfterEach
  void stopTarget() throws Exception {
    if (target != null) {
      target.destroy();
      target.waitFor();
    }
  }

  /** The library's directory as the target uses it; world-readable like any lib directory. */
  private Path libDir() throws IOException {
    Path d = Files.createDirectories(dir.resolve("app"));
    Files.setPosixFilePermissions(d, PosixFilePermissions.fromString("rwxr-xr-x"));
    return d;
  }

  /**
   * A C source of host/src/test/resources/native: dlopen_victim.c (a library blocking in
   * victim_wait) and dlopen_main.c (which loads it), shared by DebugFileSymbolsTest and
   * TargetFilesTest.
   */
  private static String source(String name) throws Exception {
    return Files.readString(
        Path.of(DebugFileSymbolsTest.class.getResource("/native/" + name).toURI()));
  }

  private Path compile(Path out, String source, String... flags) throws Exception {
    Path src = out.resolveSibling(out.getFileName() + ".c");
    Files.writeString(src, source, StandardCharsets.UTF_8);
    List<String> cmd = new ArrayList<>(List.of("gcc", "-O1", "-g", "-o", out.toString(),
        src.toString()));
    cmd.addAll(List.of(flags));
    run(cmd);
    return out;
  }

  private static void run(List<String> cmd) throws Exception {
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    String log = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    if (!p.waitFor(120, TimeUnit.SECONDS) || p.exitValue() != 0) {
      throw new IOException(String.join(" ", cmd) + " failed: " + log);
    }
  }

  /**
   * full.so (with symbols), its debug file libvictim.debug and the stripped libvictim.so whose
   * .gnu_debuglink names it with its CRC32; all in {@code libDir}.
   */
  private Path buildLibrary(Path libDir, String buildId) throws Exception {
    String idFlag = buildId == null ? "-Wl,--build-id=none" : "-Wl,--build-id=0x" + buildId;
    Path full = compile(libDir.resolve("full.so"), source(LIB), "-shared", "-fPIC", idFlag);
    run(List.of("objcopy", "--only-keep-debug", full.toString(),
        libDir.resolve("libvictim.debug").toString()));
    Path stripped = libDir.resolve("libvictim.so");
    run(List.of("objcopy", "--strip-all",
        "--add-gnu-debuglink=" + libDir.resolve("libvictim.debug"), full.toString(),
        stripped.toString()));
    return stripped;
  }

  /** The same code with the function renamed, readable by root only. */
  private Path rootOnlyElf(String buildId) throws Exception {
    Path secretDir = Files.createDirectories(dir.resolve("root-only"));
    Files.setPosixFilePermissions(secretDir, PosixFilePermissions.fromString("rwx------"));
    Path secret = compile(secretDir.resolve("secret.so"), source(LIB), "-shared", "-fPIC",
        "-Dvictim_wait=root_only_secret_fn", "-Wl,--build-id=0x" + buildId);
    Files.setPosixFilePermissions(secret, PosixFilePermissions.fromString("rw-------"));
    return secret;
  }

  /** victim_wait's link-time address, from the unstripped build. */
  private long victimWait(Path libDir) throws Exception {
    ElfFile full = ElfFile.open(libDir.resolve("full.so"));
    return full.findSymbol("victim_wait").orElseThrow().value() + 1;
  }

  /** Starts a real process that loads {@code lib} and blocks inside victim_wait. */
  private int startTarget(Path lib) throws Exception {
    Path main = compile(dir.resolve("main"), source(MAIN));
    target = new ProcessBuilder(main.toString(), lib.toString()).start();
    byte[] line = new byte[6];
    int n = target.getInputStream().readNBytes(line, 0, 6);
    assertEquals("ready\n", new String(line, 0, n, StandardCharsets.US_ASCII));
    return (int) target.pid();
  }

  /** What the host names victim_wait's address in the target, and its counters. */
  private record Lookup(Optional<String> name, Map<String, Long> counters) {}

  private Lookup lookUp(int pid, Path lib, long address) throws Exception {
    List<String> warnings = new ArrayList<>();
    try (TargetProcess process = new TargetProcess(pid, ProcFs.system(), new ModuleOpener(),
        ProcessMemory.of(pid), new PluginRegistry(List.of(), List.of()),
        new PluginGuard(warnings::add), warnings::add)) {
      process.refresh();
      LoadedModule module = process.table().modules().stream()
          .filter(m -> m.path().equals(lib.toString())).findFirst()
          .orElseThrow(() -> new AssertionError("no module " + lib + "; " + warnings));
      Optional<String> name = module.symbols().lookup(address).map(m -> m.symbol().name());
      return new Lookup(name, process.getAndResetCounters());
    }
  }

  @Test
  void aMatchingDebugFileNamesTheStrippedFunction() throws Exception {
    Path libDir = libDir();
    Path lib = buildLibrary(libDir, BUILD_ID);
    Lookup found = lookUp(startTarget(lib), lib, victimWait(libDir));
    assertEquals(Optional.of("victim_wait"), found.name());
    assertFalse(found.counters().keySet().stream().anyMatch(k -> k.startsWith("debug_file_")),
        found.counters().toString());
  }

  /**
   * A plug-in's view of the same lookup (API 2.0): the stripped library's image offers the
   * verified debug file as an image of its own, whose DWARF it can read section by section
   * (.debug_info starts with its unit's length and DWARF version); an unstripped image has none.
   */
  @Test
  void aPluginReadsTheVerifiedDebugFilesDwarfThroughTheStrippedImage() throws Exception {
    Path libDir = libDir();
    Path lib = buildLibrary(libDir, BUILD_ID);
    int pid = startTarget(lib);
    List<String> warnings = new ArrayList<>();
    try (TargetProcess process = new TargetProcess(pid, ProcFs.system(), new ModuleOpener(),
        ProcessMemory.of(pid), new PluginRegistry(List.of(), List.of()),
        new PluginGuard(warnings::add), warnings::add)) {
      process.refresh();
      var image = process.modules().stream().filter(m -> m.path().equals(lib.toString()))
          .findFirst().orElseThrow(() -> new AssertionError("no module " + lib)).image();
      assertTrue(image.section(".debug_info").isEmpty(), "stripped");
      var debug = image.debugImage().orElseThrow(() -> new AssertionError("no debug image; "
          + warnings + " " + process.getAndResetCounters()));
      var info = debug.section(".debug_info").orElseThrow();
      byte[] head = new byte[6];
      assertEquals(6, debug.readSection(info, 0, head, 0, 6));
      java.nio.ByteBuffer b = java.nio.ByteBuffer.wrap(head).order(java.nio.ByteOrder.LITTLE_ENDIAN);
      long unitLength = b.getInt(0) & 0xffffffffL;
      int version = b.getShort(4);
      assertTrue(unitLength > 0 && unitLength < info.size(), "unit length " + unitLength);
      assertTrue(version >= 2 && version <= 5, "DWARF version " + version);
      byte[] tail = new byte[64];
      assertEquals(10, debug.readSection(info, info.size() - 10, tail, 0, 64), "cut at the end");
      assertEquals(0, debug.readSection(info, info.size(), tail, 0, 64), "past the end");
      assertTrue(debug.debugImage().isEmpty(), "a debug file has its own symbol table");
      var main = process.modules().stream().filter(m -> m.path().endsWith("/main"))
          .findFirst().orElseThrow().image();
      assertTrue(main.debugImage().isEmpty(), "main was built with -g and not stripped");
      assertTrue(main.section(".debug_info").isPresent());
    }
  }

  @Test
  void aDebugLinkSymlinkedToARootOnlyElfIsNotFollowed() throws Exception {
    Path libDir = libDir();
    Path lib = buildLibrary(libDir, BUILD_ID);
    Path secret = rootOnlyElf(BUILD_ID);
    Files.delete(libDir.resolve("libvictim.debug"));
    Files.createSymbolicLink(libDir.resolve("libvictim.debug"), secret);
    // The secret really would label the frame: same build id, the name at that address.
    ElfFile secretElf = ElfFile.open(secret);
    assertEquals(secretElf.buildId(), ElfFile.open(lib).buildId());
    assertEquals("root_only_secret_fn",
        secretElf.symbolize(victimWait(libDir)).orElseThrow().symbol().name());

    Lookup found = lookUp(startTarget(lib), lib, victimWait(libDir));

    assertFalse(found.name().filter(n -> n.contains("secret")).isPresent(), found.toString());
    assertEquals(1L, found.counters().get("debug_file_symlink"), found.counters().toString());
  }

  /** Without a build id only the CRC32 can vouch for a file; a different ELF is refused. */
  @Test
  void withoutABuildIdOnlyTheCrcOfTheDebugLinkVouches() throws Exception {
    Path libDir = libDir();
    Path lib = buildLibrary(libDir, null);
    long address = victimWait(libDir);
    int pid = startTarget(lib);
    assertEquals(Optional.of("victim_wait"), lookUp(pid, lib, address).name(),
        "the real debug file, matched by CRC32");

    Path impostor = compile(dir.resolve("impostor.so"), source(LIB), "-shared", "-fPIC",
        "-Dvictim_wait=impostor_fn", "-Wl,--build-id=none");
    Files.copy(impostor, libDir.resolve("libvictim.debug"), StandardCopyOption.REPLACE_EXISTING);
    Lookup found = lookUp(pid, lib, address);
    assertFalse(found.name().filter(n -> n.contains("impostor")).isPresent(), found.toString());
    assertEquals(1L, found.counters().get("debug_file_mismatch"), found.counters().toString());
  }

  @Test
  void aFifoAsTheDebugFileIsNeverOpened() throws Exception {
    Path libDir = libDir();
    Path lib = buildLibrary(libDir, BUILD_ID);
    Files.delete(libDir.resolve("libvictim.debug"));
    try (BlockedWriter writer = BlockedWriter.on(libDir.resolve("libvictim.debug"))) {
      Lookup found = lookUp(startTarget(lib), lib, victimWait(libDir));
      assertEquals(1L, found.counters().get("debug_file_not_regular"),
          found.counters().toString());
      assertTrue(writer.stillBlockedAfter(300), "polystack opened the FIFO");
    }
  }

  /**
   * Paths are resolved inside the target's root, not polystack's: here a directory standing for
   * a container's root. The module's own directory in polystack's namespace holds a matching
   * debug file that must not be found; the root's /usr/lib/debug/.build-id file is; and a
   * symlink there (a Fedora-style link) is refused like any other.
   */
  @Test
  void candidatesAreResolvedInsideTheTargetsRootWithoutSymlinks() throws Exception {
    Path libDir = libDir();
    Path lib = buildLibrary(libDir, BUILD_ID);
    ElfFile module = ElfFile.open(lib);
    long address = victimWait(libDir);
    Path root = Files.createDirectories(dir.resolve("container-root"));
    Map<String, Long> refused = new HashMap<>();
    DebugFiles inRoot = new DebugFiles(root);

    assertTrue(inRoot.find(module, lib.toString(), r -> refused.merge(r, 1L, Long::sum))
        .isEmpty(), "found " + libDir + " outside the target's root");

    Path byId = Files.createDirectories(root.resolve("usr/lib/debug/.build-id")
        .resolve(BUILD_ID.substring(0, 2))).resolve(BUILD_ID.substring(2) + ".debug");
    Files.copy(libDir.resolve("libvictim.debug"), byId);
    ElfFile debug = inRoot.find(module, lib.toString(), r -> refused.merge(r, 1L, Long::sum))
        .orElseThrow();
    assertEquals("victim_wait", debug.symbolize(address).orElseThrow().symbol().name());

    Files.delete(byId);
    Files.createSymbolicLink(byId, libDir.resolve("libvictim.debug"));
    assertTrue(inRoot.find(module, lib.toString(), r -> refused.merge(r, 1L, Long::sum))
        .isEmpty());
    assertEquals(Map.of(DebugFiles.SYMLINK, 1L), refused);
  }

  /**
   * One opener serves many processes: the debug file their stripped module shares is parsed
   * once, and each process's lookup still resolves it inside that process's root.
   */
  @Test
  void processesOfOneOpenerShareTheParsedDebugFile() throws Exception {
    Path libDir = libDir();
    Path lib = buildLibrary(libDir, BUILD_ID);
    ElfFile module = ElfFile.open(lib);
    int first = startTarget(lib);
    Process firstTarget = target;
    int second = startTarget(lib);
    try {
      ModuleOpener opener = new ModuleOpener();
      Map<String, Long> refused = new HashMap<>();
      ElfFile a = opener.debugFiles(first)
          .find(module, lib.toString(), r -> refused.merge(r, 1L, Long::sum)).orElseThrow();
      ElfFile b = opener.debugFiles(second)
          .find(module, lib.toString(), r -> refused.merge(r, 1L, Long::sum)).orElseThrow();
      assertSame(a, b, "parsed again for the second process");
      assertEquals("victim_wait",
          b.symbolize(victimWait(libDir)).orElseThrow().symbol().name());
      assertTrue(refused.isEmpty(), refused.toString());
    } finally {
      firstTarget.destroy();
      firstTarget.waitFor();
    }
  }
}
