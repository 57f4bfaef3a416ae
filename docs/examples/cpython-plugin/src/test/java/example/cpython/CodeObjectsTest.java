package example.cpython;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.polystack.plugin.api.MemoryReadException;
import dev.polystack.plugin.api.RemoteMemory;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.RandomAccessFile;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Code objects read after the tick, on a live Python ({@code -Dcpython.python}, default {@code
 * python3.11} on the PATH) through its {@code /proc/PID/mem}: a code object seen once is named
 * from the cache after it is freed and its block holds a bytes object, which the program itself
 * confirms by the block's address; an address never seen as a code object fails the walk.
 */
class CodeObjectsTest {
  /**
   * Makes a code object and prints its address, {@code PyCode_Type}'s and the minor version;
   * on the next line, drops it and allocates bytes objects of its size until one takes its block.
   */
  private static final String PROGRAM = """
      import gc, sys
      ns = {}
      exec(compile("def gone():\\n    return 1\\n", "<gone>", "exec"), ns)
      code = ns["gone"].__code__
      address, size = id(code), sys.getsizeof(code)
      print(hex(address), hex(id(type(code))), sys.version_info.minor, flush=True)
      sys.stdin.readline()
      del ns, code
      gc.collect()  # the function and its globals dict hold each other
      kept, reused = [], None
      for i in range(200000):
          b = bytes(max(2, size - sys.getsizeof(b"") - i % 16))
          if id(b) == address:
              reused = b
              break
          kept.append(b)
      print("reused" if reused is not None else "not reused", flush=True)
      sys.stdin.readline()
      """;

  @Test
  void freedCodeObjectIsNamedFromTheCacheAndAnUnseenOneFails() throws Exception {
    String python = System.getProperty("cpython.python", "python3.11");
    Process p = new ProcessBuilder(python, "-c", PROGRAM).redirectError(
        ProcessBuilder.Redirect.INHERIT).start();
    try (BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(),
            StandardCharsets.UTF_8));
        Writer in = p.outputWriter(StandardCharsets.UTF_8)) {
      String first = out.readLine();
      assertNotNull(first, python + " printed nothing: is it installed?");
      // Opened once the program runs: a launcher (pyenv's shim) execs into it first.
      ProcMemory memory = new ProcMemory(p.pid());
      String[] words = first.split(" ");
      long address = Long.decode(words[0]);
      long codeType = Long.decode(words[1]);
      Layout layout = Layout.forMinor(Integer.parseInt(words[2]));
      assertNotNull(layout, python + " is 3." + words[2] + ", which this plug-in has no layout for");

      CodeObjects codes = new CodeObjects(layout, codeType);
      CodeObjects.Code live = codes.code(memory, address);
      assertEquals("gone", live.qualname());
      assertEquals("<gone>", live.filename());
      assertEquals(1, live.firstLine());
      assertSame(live, codes.code(memory, address), "a code object unchanged is the cached one");
      assertEquals(0, codes.getAndResetFreedSinceTick());

      in.write("free\n");
      in.flush();
      assertEquals("reused", out.readLine(), "no bytes object took the freed code's block");
      assertSame(live, codes.code(memory, address));
      assertEquals(1, codes.getAndResetFreedSinceTick());
      assertEquals(0, codes.getAndResetFreedSinceTick(), "the count resets once read");

      WalkException unseen = assertThrows(WalkException.class,
          () -> new CodeObjects(layout, codeType).code(memory, address));
      assertEquals("not_a_code_object", unseen.reason());
      in.write("exit\n");
      in.flush();
      assertTrue(p.waitFor(10, TimeUnit.SECONDS), "the Python did not exit");
      memory.close();
    } finally {
      p.destroyForcibly();
    }
  }

  /** A live process's memory through {@code /proc/PID/mem}, as a host's reads would be. */
  private static final class ProcMemory implements RemoteMemory, AutoCloseable {
    private final RandomAccessFile mem;

    ProcMemory(long pid) throws IOException {
      this.mem = new RandomAccessFile("/proc/" + pid + "/mem", "r");
    }

    @Override
    public int read(long address, byte[] dst, int offset, int length)
        throws MemoryReadException {
      if (length > MAX_READ) {
        throw new MemoryReadException(address, length, "longer than MAX_READ");
      }
      try {
        mem.seek(address);
        int n = mem.read(dst, offset, length);
        if (n <= 0) {
          throw new MemoryReadException(address, length, "nothing read");
        }
        return n;
      } catch (IOException e) {
        throw new MemoryReadException(address, length, e.getMessage());
      }
    }

    @Override
    public void close() throws IOException {
      mem.close();
    }
  }
}
