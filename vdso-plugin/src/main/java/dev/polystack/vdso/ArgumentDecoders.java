package dev.polystack.vdso;

import dev.polystack.plugin.api.ArgumentDecoder;
import dev.polystack.plugin.api.ArgumentRegisters;
import dev.polystack.plugin.api.DecodedArgument;
import dev.polystack.plugin.api.DecodedReturn;
import dev.polystack.plugin.api.ImageReadException;
import dev.polystack.plugin.api.ModuleImage;
import dev.polystack.plugin.api.ModuleSymbol;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * Decoders of the time functions' registers for sites the host places itself ({@code probe
 * --monitor args}): the vDSO's exports, which return a negative errno as their system-call
 * fallback does, and the C library's functions of the same names, which return -1 and leave the
 * error in {@code errno}, thread memory no probe records.
 */
final class ArgumentDecoders {
  private static final String GLIBC = "GLIBC_";

  private ArgumentDecoders() {}

  /** How a function's return register reports its result. */
  enum Convention {
    /** The vDSO: an {@code int} result, a failure is {@code -errno}. */
    NEGATIVE_ERRNO,
    /** libc: an {@code int} result, a failure is -1 with errno set in memory. */
    MINUS_ONE,
    /** A {@code time_t}/{@code ssize_t}: the value itself, a failure is -1 with errno set. */
    LONG_MINUS_ONE,
    /** The vDSO's {@code time} and {@code getrandom}: the value, or {@code -errno}. */
    LONG_NEGATIVE_ERRNO
  }

  /** How an argument register is written. */
  enum Kind { CLOCK_ID, POINTER, SIZE, GRND_FLAGS, OPAQUE_LEN }

  /** A decoder for {@code symbol} of {@code image}, if it is one of the functions known here. */
  static Optional<ArgumentDecoder> forSymbol(ModuleImage image, ModuleSymbol symbol) {
    if (!symbol.function()) {
      return Optional.empty();
    }
    try {
      String vdso = vdsoName(image, symbol);
      if (vdso != null) {
        return Optional.ofNullable(vdso(vdso));
      }
      return cLibrary(image, symbol) ? Optional.ofNullable(libc(symbol.name()))
          : Optional.empty();
    } catch (ImageReadException e) {
      return Optional.empty(); // a module that cannot be read is not one known here
    }
  }

  /** The vDSO export at the symbol's address (its public name), or null outside a vDSO. */
  private static String vdsoName(ModuleImage image, ModuleSymbol symbol)
      throws ImageReadException {
    for (Inventory.Export e : Inventory.of(image).exports()) {
      if (e.address() == symbol.value()) {
        return e.name();
      }
    }
    return null;
  }

  /**
   * A C library's function: glibc versions its symbols {@code GLIBC_*}; an unversioned one
   * counts where the image holds the C library's start-up code (musl, a static executable).
   */
  private static boolean cLibrary(ModuleImage image, ModuleSymbol symbol)
      throws ImageReadException {
    if (symbol.version().startsWith(GLIBC)) {
      return true;
    }
    return symbol.version().isEmpty() && image.symbol("__libc_start_main")
        .filter(s -> s.function() && s.value() != 0).isPresent();
  }

  static Function vdso(String name) {
    return switch (name) {
      case "clock_gettime" -> new Function(Convention.NEGATIVE_ERRNO,
          List.of("clockid", "tp"), List.of(Kind.CLOCK_ID, Kind.POINTER));
      case "clock_getres" -> new Function(Convention.NEGATIVE_ERRNO,
          List.of("clockid", "res"), List.of(Kind.CLOCK_ID, Kind.POINTER));
      case "gettimeofday" -> new Function(Convention.NEGATIVE_ERRNO,
          List.of("tv", "tz"), List.of(Kind.POINTER, Kind.POINTER));
      case "time" -> new Function(Convention.LONG_NEGATIVE_ERRNO,
          List.of("tloc"), List.of(Kind.POINTER));
      case "getcpu" -> new Function(Convention.NEGATIVE_ERRNO,
          List.of("cpu", "node", "tcache"), List.of(Kind.POINTER, Kind.POINTER, Kind.POINTER));
      case "getrandom" -> new Function(Convention.LONG_NEGATIVE_ERRNO,
          List.of("buffer", "length", "flags", "opaque_state", "opaque_len"),
          List.of(Kind.POINTER, Kind.SIZE, Kind.GRND_FLAGS, Kind.POINTER, Kind.OPAQUE_LEN));
      default -> null;
    };
  }

  static Function libc(String name) {
    return switch (name) {
      case "clock_gettime" -> new Function(Convention.MINUS_ONE,
          List.of("clockid", "tp"), List.of(Kind.CLOCK_ID, Kind.POINTER));
      case "clock_getres" -> new Function(Convention.MINUS_ONE,
          List.of("clockid", "res"), List.of(Kind.CLOCK_ID, Kind.POINTER));
      case "gettimeofday" -> new Function(Convention.MINUS_ONE,
          List.of("tv", "tz"), List.of(Kind.POINTER, Kind.POINTER));
      case "time" -> new Function(Convention.LONG_MINUS_ONE,
          List.of("tloc"), List.of(Kind.POINTER));
      case "getcpu" -> new Function(Convention.MINUS_ONE,
          List.of("cpu", "node"), List.of(Kind.POINTER, Kind.POINTER));
      case "getrandom" -> new Function(Convention.LONG_MINUS_ONE,
          List.of("buf", "buflen", "flags"), List.of(Kind.POINTER, Kind.SIZE, Kind.GRND_FLAGS));
      default -> null;
    };
  }

  /** One prototype: its parameters in register order and its return convention. */
  record Function(Convention convention, List<String> names, List<Kind> kinds)
      implements ArgumentDecoder {
    Function {
      names = List.copyOf(names);
      kinds = List.copyOf(kinds);
      if (names.size() != kinds.size() || names.size() > ArgumentRegisters.COUNT) {
        throw new IllegalArgumentException("a name and a kind per argument register: " + names
            + " " + kinds);
      }
    }

    @Override
    public List<DecodedArgument> arguments(ArgumentRegisters entry) {
      List<DecodedArgument> out = new ArrayList<>(names.size());
      for (int i = 0; i < names.size(); i++) {
        out.add(new DecodedArgument(names.get(i), text(kinds.get(i), entry.get(i))));
      }
      return out;
    }

    @Override
    public DecodedReturn returnValue(long returnRegister) {
      return switch (convention) {
        case NEGATIVE_ERRNO -> negativeErrno((int) returnRegister);
        case LONG_NEGATIVE_ERRNO -> negativeErrno(returnRegister);
        case MINUS_ONE -> minusOne((int) returnRegister);
        case LONG_MINUS_ONE -> minusOne(returnRegister);
      };
    }

    private static DecodedReturn negativeErrno(long result) {
      String errno = Errno.nameOfResult(result);
      return errno == null ? DecodedReturn.success(Long.toString(result))
          : DecodedReturn.failure("-" + errno, errno);
    }

    private static DecodedReturn minusOne(long result) {
      return result == -1 ? DecodedReturn.failure("-1", null)
          : DecodedReturn.success(Long.toString(result));
    }
  }

  static String text(Kind kind, long value) {
    return switch (kind) {
      case CLOCK_ID -> ClockIds.name((int) value); // clockid_t is an int
      case POINTER -> value == 0 ? "NULL" : Decoders.hex(value);
      case SIZE -> Long.toUnsignedString(value);
      case GRND_FLAGS -> Decoders.flags(value & 0xffffffffL, Decoders.GRND);
      case OPAQUE_LEN -> value == -1L ? "~0UL" : Long.toUnsignedString(value);
    };
  }
}
