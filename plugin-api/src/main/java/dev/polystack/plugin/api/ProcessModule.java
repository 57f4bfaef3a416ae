package dev.polystack.plugin.api;

import java.util.Objects;

/**
 * A module mapped in a target process, as the host opened it: the executable, a library, or the
 * vDSO. A runtime plug-in reaches its neighbours through these (the C library's thread layout,
 * the dynamic loader's TLS bookkeeping), parsed once by the host and read inside the target's
 * root (docs/reliability.md, "Root safety").
 *
 * @param path the path the process maps it under, or {@code [vdso]}
 * @param start lowest mapped address
 * @param end end of the highest mapping (exclusive)
 * @param loadBias runtime address minus module virtual address
 * @since 1.6
 */
public record ProcessModule(String path, long start, long end, long loadBias, ModuleImage image) {
  public ProcessModule {
    Objects.requireNonNull(path, "path");
    Objects.requireNonNull(image, "image");
  }

  /** The file name, the part of the path after its last {@code /}. */
  public String fileName() {
    return path.substring(path.lastIndexOf('/') + 1);
  }
}
