package dev.polystack.plugin.api;

import java.util.List;

/**
 * The host's view of a target process, shared by all plug-in instances attached to it.
 *
 * @since 1.0
 */
public interface ProcessContext {

  int pid();

  /** The current memory map, as last read by the host. */
  List<Mapping> mappings();

  /** Memory of the process, for reads that need no consistent thread snapshot. */
  RemoteMemory memory();
}
