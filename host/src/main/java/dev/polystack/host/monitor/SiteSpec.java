package dev.polystack.host.monitor;

import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A probe site as the user writes it: {@code MODULE:SYMBOL[+OFF][%return]}, e.g.
 * {@code libc.so.6:write}, {@code nginx:ngx_http_process_request%return},
 * {@code /usr/lib/libfoo.so:foo+0x10}. MODULE is a mapped file's path or file name (or the
 * file name's start up to a dot: {@code libc} for libc.so.6), or {@code [vdso]}; OFF is bytes
 * into the function, decimal or 0x-hexadecimal. A bare {@code 0xADDRESS} is an instruction's
 * address in the target, for code no file holds (hardware breakpoints only). {@code
 * lua:CHUNK:LINE} is a Lua function, resolved by the runtime's plug-in to memory watched with a
 * hardware data breakpoint. docs/probes.md, "Sites".
 *
 * @param module the module as written; empty for an address site
 * @param symbol the symbol, optionally with {@code @VERSION}; empty for an address site
 * @param offset bytes from the symbol's address
 * @param atReturn the site is the function's return, not its entry
 * @param address the address of an address site, else 0
 * @param runtime a runtime-level site: {@code module} is its scheme ({@code lua}), {@code
 *     symbol} the rest ({@code CHUNK:LINE}), resolved by a plug-in
 */
public record SiteSpec(String module, String symbol, long offset, boolean atReturn,
    long address, boolean runtime) {
  /** The scheme of Lua function sites, {@code lua:CHUNK:LINE}. */
  public static final String LUA = "lua";
  /** The module name of the vDSO, as /proc/PID/maps names its mapping. */
  public static final String VDSO = "[vdso]";
  private static final Pattern FORMAT = Pattern.compile(
      "(.+):([A-Za-z_.$][A-Za-z0-9_.$@]*)(?:\\+(0x[0-9a-fA-F]{1,8}|[0-9]{1,10}))?(%return)?");
  private static final Pattern ADDRESS = Pattern.compile("0x([0-9a-fA-F]{1,16})");
  private static final Pattern LUA_SITE = Pattern.compile("lua:(.+:[0-9]{1,9})(%return)?");

  public SiteSpec {
    if (runtime && (address != 0 || offset != 0 || atReturn || module.isEmpty()
        || symbol.isEmpty())) {
      throw new IllegalArgumentException("a runtime site has a scheme and a name only");
    }
    if (address != 0) {
      if (!module.isEmpty() || !symbol.isEmpty() || offset != 0 || atReturn) {
        throw new IllegalArgumentException("an address site has no module, symbol, offset or"
            + " return");
      }
    } else if (module.isEmpty() || symbol.isEmpty() || offset < 0) {
      throw new IllegalArgumentException("site " + module + ":" + symbol + "+" + offset);
    }
    if (atReturn && offset != 0) {
      throw new IllegalArgumentException("a %return site is the function's return: it takes no"
          + " +OFF");
    }
  }

  /** A symbol site. */
  public SiteSpec(String module, String symbol, long offset, boolean atReturn) {
    this(module, symbol, offset, atReturn, 0, false);
  }

  /** True for a bare address: code that is not in a file (JIT code). */
  public boolean isAddress() {
    return address != 0;
  }

  /** True for a function of the vDSO. */
  public boolean isVdso() {
    return module.equals(VDSO);
  }

  /**
   * Parses {@code text}.
   *
   * @throws IllegalArgumentException with the user's one line when it is not a site
   */
  public static SiteSpec parse(String text) {
    Matcher a = ADDRESS.matcher(text);
    if (a.matches()) {
      long at = Long.parseUnsignedLong(a.group(1), 16);
      if (at == 0) {
        throw new IllegalArgumentException("'" + text + "': address 0 is no code; give the"
            + " address of an instruction in the target");
      }
      return new SiteSpec("", "", 0, false, at, false);
    }
    Matcher lua = LUA_SITE.matcher(text);
    if (lua.matches()) {
      if (lua.group(2) != null) {
        throw new IllegalArgumentException("'" + text + "': a Lua site counts the function's"
            + " entries only (its watch is the first bytecode instruction, which a return does"
            + " not touch); write " + LUA + ":" + lua.group(1));
      }
      return new SiteSpec(LUA, lua.group(1), 0, false, 0, true);
    }
    Matcher m = FORMAT.matcher(text);
    if (!m.matches()) {
      throw new IllegalArgumentException("'" + text + "' is not a probe site: write"
          + " MODULE:SYMBOL[+OFF][%return], e.g. libc.so.6:write or libc.so.6:malloc%return"
          + " (or, with --hw, [vdso]:clock_gettime or 0xADDRESS; or lua:CHUNK:LINE)");
    }
    long offset = 0;
    if (m.group(3) != null) {
      String off = m.group(3);
      offset = off.startsWith("0x") ? Long.parseLong(off.substring(2), 16) : Long.parseLong(off);
    }
    if (m.group(4) != null && offset != 0) {
      throw new IllegalArgumentException("'" + text + "': a %return site is the function's"
          + " return and takes no +OFF; write MODULE:SYMBOL%return");
    }
    return new SiteSpec(m.group(1), m.group(2), offset, m.group(4) != null);
  }

  /** As the user wrote it, normalised: the name of the site in every output. */
  @Override
  public String toString() {
    if (isAddress()) {
      return "0x" + Long.toHexString(address);
    }
    if (runtime) {
      return module + ":" + symbol;
    }
    return module + ":" + symbol + (offset != 0 ? "+0x" + Long.toHexString(offset) : "")
        + (atReturn ? "%return" : "");
  }
}
