package dev.polystack.luajit;

import dev.polystack.plugin.api.ImageReadException;
import dev.polystack.plugin.api.ModuleImage;
import dev.polystack.plugin.api.ModuleSymbol;
import java.util.Optional;

/**
 * The few x86-64 instruction shapes offset discovery needs, matched at instruction boundaries a
 * length decoder cannot guarantee: each match is cross-checked against the layout table and,
 * later, against the live process, so a false match is rejected, never trusted.
 */
final class Disassembly {
  /** How far into a function the patterns are looked for. */
  static final int WINDOW = 256;

  /** A matched store: where it was and the displacement it wrote to. */
  record Store(long address, int displacement, String text) {}

  private Disassembly() {}

  /**
   * In {@code lua_close}: G is loaded with {@code mov 0x10(%rdi),%reg} (L->glref), then
   * {@code movq $0x0,disp32(%reg)} clears G->cur_L; disp32 is cur_L.
   */
  static Optional<Store> curLFromLuaClose(ModuleImage image) throws ImageReadException {
    Optional<ModuleSymbol> fn = image.symbol("lua_close");
    if (fn.isEmpty() || !fn.get().function()) {
      return Optional.empty();
    }
    byte[] code = new byte[WINDOW];
    int n = image.read(fn.get().value(), code, 0, code.length);
    int greg = -1;
    for (int i = 0; i + 4 <= n; i++) {
      int rex = code[i] & 0xff;
      if (greg < 0) {
        // REX.W (+R) 8B /r with mod=01 rm=rdi disp8=0x10: mov 0x10(%rdi),%r64
        if ((rex & 0xfb) == 0x48 && (code[i + 1] & 0xff) == 0x8b
            && ((code[i + 2] & 0xc7) == 0x47) && code[i + 3] == 0x10) {
          greg = ((code[i + 2] >> 3) & 7) | ((rex & 4) << 1);
          i += 3;
        }
        continue;
      }
      // REX.W (+B) C7 /0 with mod=10 rm=greg disp32 imm32=0: movq $0x0,disp32(%greg)
      if (i + 11 <= n && (rex & 0xfe) == 0x48 && (code[i + 1] & 0xff) == 0xc7) {
        int modrm = code[i + 2] & 0xff;
        int rm = (modrm & 7) | ((rex & 1) << 3);
        if ((modrm & 0xf8) == 0x80 && rm == greg && (rm & 7) != 4) {
          int disp = le32(code, i + 3);
          int imm = le32(code, i + 7);
          if (imm == 0) {
            long at = fn.get().value() + i;
            return Optional.of(new Store(at, disp, String.format(
                "lua_close+0x%x: movq $0x0,0x%x(G)", i, disp)));
          }
        }
      }
    }
    return Optional.empty();
  }

  private static int le32(byte[] b, int off) {
    return (b[off] & 0xff) | (b[off + 1] & 0xff) << 8 | (b[off + 2] & 0xff) << 16
        | (b[off + 3] & 0xff) << 24;
  }
}
