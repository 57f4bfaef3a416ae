import dev.polystack.host.elf.ElfFile;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/** Heap retained by the symbolizers of the files given, after full collections (bench/run-symbol-memory.sh). */
public class SymbolMemory {
  static long used() throws Exception {
    for (int i = 0; i < 4; i++) { System.gc(); Thread.sleep(100); }
    Runtime r = Runtime.getRuntime();
    return r.totalMemory() - r.freeMemory();
  }
  public static void main(String[] args) throws Exception {
    List<Object> keep = new ArrayList<>();
    long before = used();
    long symbols = 0;
    for (String a : args) {
      ElfFile elf = ElfFile.open(Path.of(a));
      var s = elf.symbolizer();
      symbols += s.symbols().size();
      keep.add(elf);
    }
    long after = used();
    System.out.printf("%d files, %d indexed symbols, %.1f MiB retained, %.0f bytes per indexed symbol%n",
        keep.size(), symbols, (after - before) / 1048576.0, (double) (after - before) / symbols);
  }
}
