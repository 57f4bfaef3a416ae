package dev.polystack.host.modules;

import dev.polystack.host.elf.ElfFile;
import dev.polystack.host.memory.RemoteMemory;
import dev.polystack.host.proc.MappedModule;
import dev.polystack.host.proc.MemoryMapping;

/**
 * Where a target's modules come from: the live process ({@link ModuleOpener}) or a snapshot
 * (embedded or referenced files, verified by content hash).
 */
public interface ModuleSource {

  /** Opens the file behind the mappings of {@code module} in process {@code pid}. */
  ElfFile open(int pid, MappedModule module) throws ModuleOpenException;

  /**
   * Where separate debug files of process {@code pid}'s modules are looked up: inside the
   * directory that is that process's root.
   */
  DebugFiles debugFiles(int pid);

  /** Reads and parses the vDSO from the target's memory (it has no file). */
  ElfFile openVdso(MemoryMapping vdso, RemoteMemory memory) throws ModuleOpenException;
}
