package dev.polystack.host.modules;

import dev.polystack.host.elf.ElfFile;
import dev.polystack.host.memory.ProcessMemory;
import dev.polystack.host.proc.MappedFile;
import dev.polystack.host.proc.MemoryMapping;

/**
 * Where a target's modules come from: the live process ({@link ModuleOpener}) or a snapshot
 * (embedded or referenced files, verified by content hash).
 */
public interface ModuleSource {

  /** Opens the file behind the mappings of {@code module} in process {@code pid}. */
  ElfFile open(int pid, MappedFile module) throws ModuleOpenException;

  /**
   * Where separate debug files of process {@code pid}'s modules are looked up: inside the
   * directory that is that process's root.
   */
  DebugFiles debugFiles(int pid);

  /**
   * Reads and parses the vDSO from the target's memory (it has no file). The file may be shared
   * with other processes: its bias is {@code vdso.start() - imageStartAddress()}.
   */
  ElfFile openVdso(MemoryMapping vdso, ProcessMemory memory) throws ModuleOpenException;
}
