package dev.polystack.plugin.api;

import java.util.List;
import java.util.Optional;

/**
 * A parsed executable or shared library, from a file or from memory (the vDSO has no file).
 * Addresses are module virtual addresses (as in the ELF file); add the load bias for runtime
 * addresses. Every method is bounded and fails with {@link ImageReadException}, never with an
 * unchecked exception, on malformed content.
 *
 * @since 1.0
 */
public interface ModuleImage {

  /** File path, or a pseudo name such as {@code [vdso]}. */
  String name();

  /** GNU build id in lower-case hex, if the image has one. */
  Optional<String> buildId();

  /** Looks up a symbol by {@code name}, {@code name@VERSION} or {@code name@@VERSION}. */
  Optional<ModuleSymbol> symbol(String name) throws ImageReadException;

  /** Symbols of the dynamic table (exports and imports), in table order. */
  List<ModuleSymbol> dynamicSymbols() throws ImageReadException;

  /** Whether a full (.symtab) symbol table is present, i.e. the image is not stripped. */
  boolean hasStaticSymbols() throws ImageReadException;

  /** Function ranges described by call-frame information (.eh_frame FDEs), sorted by start. */
  List<CodeRange> unwindRanges() throws ImageReadException;

  /** Ranges of executable segments. */
  List<CodeRange> executableRanges() throws ImageReadException;

  /** Addresses where {@code needle} occurs in read-only data, at most {@code limit} of them. */
  List<Long> findInReadOnlyData(byte[] needle, int limit) throws ImageReadException;

  /**
   * Reads up to {@code length} bytes of the image's contents at a module virtual address; returns
   * the number of bytes read (0 when the address is not backed by the image).
   */
  int read(long address, byte[] dst, int offset, int length) throws ImageReadException;

  /**
   * Program headers in file order; empty for an image the host cannot list them for.
   *
   * @since 1.6
   */
  default List<ModuleSegment> segments() throws ImageReadException {
    return List.of();
  }

  /**
   * The first section named {@code name}; empty when there is none or no section headers.
   *
   * @since 1.6
   */
  default Optional<ModuleSection> section(String name) throws ImageReadException {
    return Optional.empty();
  }

  /**
   * A thread-local ({@code STT_TLS}) symbol by name, from the image's full symbol table or, for a
   * stripped image, its separate debug file where the host found and verified one. Its {@code
   * value} is an offset into the module's thread-local block ({@link ModuleSegment#PT_TLS}), not
   * an address. Empty when there is no such symbol or it is not thread-local.
   *
   * @since 1.6
   */
  default Optional<ModuleSymbol> threadLocalSymbol(String name) throws ImageReadException {
    return Optional.empty();
  }

  /**
   * Reads bytes of {@code section} from this image's file, from {@code offset} within the
   * section: how a plug-in reads sections that are not loaded ({@code .debug_info}, {@code
   * .debug_str}, a runtime's own notes). Returns the bytes read: fewer at the section's end, 0
   * past it or for a section with no bytes in the file ({@code SHT_NOBITS}) or not of this image.
   *
   * @since 2.0
   */
  default int readSection(ModuleSection section, long offset, byte[] dst, int dstOffset,
      int length) throws ImageReadException {
    return 0;
  }

  /**
   * The separate debug file the host found for this stripped image and verified (build id or
   * debug link CRC, under the host's rules for files a target names: docs/operations.md), as an
   * image of its own: its sections ({@code .debug_info}, {@code .symtab}, ...) through {@link
   * #section} and {@link #readSection}, e.g. for struct offsets from DWARF. Empty when the image
   * has its own symbol table (it holds what there is) or no verified debug file was found.
   *
   * @since 2.0
   */
  default Optional<ModuleImage> debugImage() throws ImageReadException {
    return Optional.empty();
  }
}
