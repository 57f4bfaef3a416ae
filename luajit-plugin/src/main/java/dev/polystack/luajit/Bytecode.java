package dev.polystack.luajit;

/**
 * Bytecode facts name inference needs (lj_bc.h). Opcodes 0..88 are the same in every 2.1 build;
 * upstream inserted bit operations at 89 in 2026, so anything above 88 is treated as an
 * instruction that writes its A operand, which makes inference stop there: unknown, never wrong.
 */
final class Bytecode {
  static final int MOV = 18;
  static final int KNIL = 44;
  static final int UGET = 45;
  static final int GGET = 54;
  static final int TGETS = 57;
  static final int CALLM = 65;
  static final int CALL = 66;
  static final int CALLMT = 67;
  static final int CALLT = 68;
  static final int ITERC = 69;
  static final int ITERN = 70;
  static final int RETM = 73;
  static final int RET1 = 76;
  static final int FORL = 79;
  static final int JITERL = 84;
  static final int JMP = 88;

  // A-operand modes (BCMode).
  static final int A_NONE = 0;
  static final int A_DST = 1;
  static final int A_BASE = 2;

  /** Metamethod names by MMS index, as lj_obj.h orders them. */
  static final String[] METAMETHODS = {
    "__index", "__newindex", "__gc", "__mode", "__eq", "__len", "__lt", "__le", "__concat",
    "__call", "__add", "__sub", "__mul", "__div", "__mod", "__pow", "__unm", "__metatable",
    "__tostring", "__new", "__pairs", "__ipairs"
  };

  static final int MM_CALL = 9;
  static final int MM_NONE = -1;

  // A mode and metamethod of opcodes 0..88, from BCDEF.
  private static final int[] A_MODE = new int[89];
  private static final int[] MM = new int[89];

  static {
    // ISLT..ISNEP compare (var), ISTC/ISFC dst, IST/ISF none, ISTYPE/ISNUM var.
    String def = ""
        + "ISLT v lt,ISGE v lt,ISLE v le,ISGT v le,ISEQV v eq,ISNEV v eq,ISEQS v eq,ISNES v eq,"
        + "ISEQN v eq,ISNEN v eq,ISEQP v eq,ISNEP v eq,ISTC d -,ISFC d -,IST n -,ISF n -,"
        + "ISTYPE v -,ISNUM v -,MOV d -,NOT d -,UNM d unm,LEN d len,ADDVN d add,SUBVN d sub,"
        + "MULVN d mul,DIVVN d div,MODVN d mod,ADDNV d add,SUBNV d sub,MULNV d mul,DIVNV d div,"
        + "MODNV d mod,ADDVV d add,SUBVV d sub,MULVV d mul,DIVVV d div,MODVV d mod,POW d pow,"
        + "CAT d concat,KSTR d -,KCDATA d -,KSHORT d -,KNUM d -,KPRI d -,KNIL b -,UGET d -,"
        + "USETV u -,USETS u -,USETN u -,USETP u -,UCLO r -,FNEW d gc,TNEW d gc,TDUP d gc,"
        + "GGET d index,GSET v newindex,TGETV d index,TGETS d index,TGETB d index,"
        + "TGETR d index,TSETV v newindex,TSETS v newindex,TSETB v newindex,TSETM b newindex,"
        + "TSETR v newindex,CALLM b call,CALL b call,CALLMT b call,CALLT b call,ITERC b call,"
        + "ITERN b call,VARG b -,ISNEXT b -,RETM b -,RET r -,RET0 r -,RET1 r -,FORI b -,"
        + "JFORI b -,FORL b -,IFORL b -,JFORL b -,ITERL b -,IITERL b -,JITERL b -,LOOP r -,"
        + "ILOOP r -,JLOOP r -,JMP r -";
    String[] ops = def.split(",");
    if (ops.length != 89) {
      throw new IllegalStateException("bytecode table has " + ops.length + " entries");
    }
    for (int i = 0; i < ops.length; i++) {
      String[] f = ops[i].split(" ");
      A_MODE[i] = switch (f[1]) {
        case "d" -> A_DST;
        case "b" -> A_BASE;
        case "n" -> A_NONE;
        default -> 3; // var, rbase, uv: neither dst nor base for inference purposes
      };
      MM[i] = mmIndex(f[2]);
    }
  }

  private Bytecode() {}

  private static int mmIndex(String name) {
    if (name.equals("-")) {
      return MM_NONE;
    }
    for (int i = 0; i < METAMETHODS.length; i++) {
      if (METAMETHODS[i].equals("__" + name)) {
        return i;
      }
    }
    throw new IllegalStateException("unknown metamethod " + name);
  }

  static int op(int ins) {
    return ins & 0xff;
  }

  static int a(int ins) {
    return (ins >>> 8) & 0xff;
  }

  static int c(int ins) {
    return (ins >>> 16) & 0xff;
  }

  static int b(int ins) {
    return ins >>> 24;
  }

  static int d(int ins) {
    return ins >>> 16;
  }

  /**
   * Whether straight-line execution ends after this instruction: a return, a loop's back edge
   * (FORL, ITERL and their variants) or a backward jump (D is biased by 0x8000).
   */
  static boolean endsStraightLine(int op, int ins) {
    return (op >= RETM && op <= RET1) || (op >= FORL && op <= JITERL)
        || (op == JMP && d(ins) < 0x8000);
  }

  static int aMode(int op) {
    return op < A_MODE.length ? A_MODE[op] : A_DST;
  }

  static int metamethod(int op) {
    return op < MM.length ? MM[op] : MM_NONE;
  }
}
