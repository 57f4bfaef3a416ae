package dev.polystack.host.monitor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class SiteSpecTest {
  @Test
  void parsesModuleSymbolOffsetAndReturn() {
    assertEquals(new SiteSpec("libc.so.6", "write", 0, false), SiteSpec.parse("libc.so.6:write"));
    assertEquals(new SiteSpec("/usr/lib/x.so", "f", 0x10, false),
        SiteSpec.parse("/usr/lib/x.so:f+0x10"));
    assertEquals(new SiteSpec("nginx", "ngx_http_process_request", 0, true),
        SiteSpec.parse("nginx:ngx_http_process_request%return"));
    assertEquals(new SiteSpec("libc", "write@GLIBC_2.2.5", 16, false),
        SiteSpec.parse("libc:write@GLIBC_2.2.5+16"));
    assertEquals("libc:f+0x10", SiteSpec.parse("libc:f+16").toString());
  }

  @Test
  void parsesTheVdsoAndBareAddresses() {
    SiteSpec vdso = SiteSpec.parse("[vdso]:clock_gettime");
    assertTrue(vdso.isVdso() && !vdso.isAddress());
    assertEquals("clock_gettime", vdso.symbol());
    SiteSpec at = SiteSpec.parse("0x7F00DEAD1000");
    assertTrue(at.isAddress() && !at.isVdso());
    assertEquals(0x7f00dead1000L, at.address());
    assertEquals("0x7f00dead1000", at.toString());
    assertThrows(IllegalArgumentException.class, () -> SiteSpec.parse("0x0"));
    assertThrows(IllegalArgumentException.class, () -> SiteSpec.parse("0x12345678123456789"));
  }

  @Test
  void parsesLuaSitesAsRuntimeSites() {
    SiteSpec lua = SiteSpec.parse("lua:/srv/app.lua:12");
    assertTrue(lua.runtime() && !lua.isAddress() && !lua.isVdso());
    assertEquals(SiteSpec.LUA, lua.module());
    assertEquals("/srv/app.lua:12", lua.symbol());
    assertEquals("lua:/srv/app.lua:12", lua.toString());
    // Not a line: a module named like the scheme, as before.
    assertTrue(!SiteSpec.parse("lua:luaL_loadfile").runtime());
    IllegalArgumentException ret = assertThrows(IllegalArgumentException.class,
        () -> SiteSpec.parse("lua:app.lua:12%return"));
    assertTrue(ret.getMessage().contains("entries only")
        && ret.getMessage().contains("lua:app.lua:12"), ret.getMessage());
  }

  @Test
  void refusesWhatIsNotASiteInOneLine() {
    for (String bad : new String[] {"libc.so.6", ":write", "libc:", "libc:f+", "libc:f+0xzz",
        "libc:f+8%return", "libc:1f", "libc:f%ret"}) {
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
          () -> SiteSpec.parse(bad), bad);
      assertTrue(!e.getMessage().contains("\n") && e.getMessage().contains("MODULE:SYMBOL")
          || e.getMessage().contains("%return"), e.getMessage());
    }
  }
}
