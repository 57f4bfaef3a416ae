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

  /**
   * The modules the host has opened in this process, in address order, as of its last completed
   * read of the memory map: during the first {@code attach} that may not hold every library yet,
   * so an instance that needs a neighbour asks in {@link RuntimeInstance#mappingsChanged} or
   * later.
   *
   * @since 1.6
   */
  default List<ProcessModule> modules() {
    return List.of();
  }
}
