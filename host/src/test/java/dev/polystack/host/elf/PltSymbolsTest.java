package dev.polystack.host.elf;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** PLT stubs named as objdump names them, for a program gcc builds here with and without IBT. */
class PltSymbolsTest {
  private static final String SOURCE = """
      #include <stdio.h>
      #include <stdlib.h>
      #include <string.h>
      int main(int argc, char **argv) {
        puts(argv[0]);
        return (int)strlen(getenv("HOME") ? getenv("HOME") : "") + abs(argc);
      }
      """;

  @TempDir Path dir;

  /** objdump -d's {@code <name@plt>} labels: address by name. */
  private static Map<String, Long> objdumpStubs(Path binary) throws Exception {
    Process p = new ProcessBuilder("objdump", "-d", binary.toString()).redirectErrorStream(true)
        .start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertTrue(p.waitFor(30, TimeUnit.SECONDS) && p.exitValue() == 0, out);
    Map<String, Long> stubs = new HashMap<>();
    Matcher m = Pattern.compile("(?m)^([0-9a-f]+) <([^>]+@plt)>:$").matcher(out);
    while (m.find()) {
      stubs.put(m.group(2), Long.parseUnsignedLong(m.group(1), 16));
    }
    return stubs;
  }

  private void stubsAsObjdumpNamesThem(String name, String... flags) throws Exception {
    Path binary = TestBinaries.compile(dir, name, SOURCE, flags);
    ElfFile elf = ElfFile.open(binary);
    // The stubs of .rela.plt's imports; objdump also labels .plt.got's (imports bound through
    // .rela.dyn, such as __cxa_finalize), which this does not name.
    SectionHeader stubs = elf.section(".plt.sec").or(() -> elf.section(".plt")).orElseThrow();
    Map<String, Long> expected = new HashMap<>(objdumpStubs(binary));
    expected.values().removeIf(a -> a < stubs.addr() || a >= stubs.addr() + stubs.size());
    assertTrue(expected.containsKey("puts@plt"), "objdump shows no puts@plt: " + expected);
    Symbolizer symbols = elf.symbolizer();
    for (Map.Entry<String, Long> stub : expected.entrySet()) {
      for (long at : new long[] {stub.getValue(), stub.getValue() + 15}) {
        var match = symbols.lookup(at);
        assertTrue(match.isPresent(), stub.getKey() + " at 0x" + Long.toHexString(at));
        assertEquals(stub.getKey(), match.get().symbol().name(), "at 0x" + Long.toHexString(at));
      }
    }
    // Past the last stub the names stop: nothing of the PLT is stretched over what follows.
    long last = expected.values().stream().mapToLong(Long::longValue).max().orElseThrow();
    var after = symbols.lookup(last + PltSymbols.STUB_SIZE);
    assertFalse(after.isPresent() && after.get().symbol().name().endsWith("@plt"),
        "after the last stub: " + after);
  }

  @Test
  void lazyBindingPlt() throws Exception {
    stubsAsObjdumpNamesThem("lazy", "-O2");
  }

  @Test
  void ibtPltSec() throws Exception {
    stubsAsObjdumpNamesThem("ibt", "-O2", "-fcf-protection=full", "-Wl,-z,ibtplt");
  }
}
