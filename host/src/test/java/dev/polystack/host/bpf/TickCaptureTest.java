package dev.polystack.host.bpf;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.polystack.host.launch.ChildProcess;
import dev.polystack.host.launch.Launcher;
import dev.polystack.host.ptrace.WaitStatus;
import dev.polystack.plugin.api.CapturePlan;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The capture program against the real kernel and small C programs built for the test. */
class TickCaptureTest {
  private static final int RATE = 99;
  private static final int STACK = 16384;
  /** Records each test waits for; half must come even on a loaded machine. */
  private static final int RECORDS = 40;
  private static final long MAGIC = 0x706f6c7973746b31L;
  private static final String TEXT = "polystack tick capture test";

  // The plan test reads `known` at the tick; .data is written at start so its page is present.
  private static final String SOURCE = """
      #include <fcntl.h>
      #include <pthread.h>
      #include <stdint.h>
      #include <stdio.h>
      #include <string.h>
      #include <sys/mman.h>
      #include <time.h>
      #include <unistd.h>

      struct known { uint64_t magic; uint64_t self; char text[48]; uint64_t tail; };
      static struct known known = { 0x706f6c7973746b31ULL, 0, "polystack tick capture test",
                                    0x1122334455667788ULL };
      volatile uint64_t counter;
      // What plansFollowData follows: table[i] = 0x7ab1e000 + i; nodes linked 0 -> 4 -> NULL.
      struct node { uint64_t tag; struct node *next; };
      static struct node nodes[5];
      static uint64_t table[8];

      __attribute__((noinline)) static void spin(void) { for (;;) counter++; }

      // Spins below a touched 32 KiB frame, so the 16 KiB over rsp are all resident.
      __attribute__((noinline)) static void deep(void) {
        volatile char buf[32768];
        for (unsigned i = 0; i < sizeof buf; i += 64) buf[i] = 1;
        spin();
      }

      int main(int argc, char **argv) {
        known.self = (uint64_t) &known;
        for (int i = 0; i < 8; i++) table[i] = 0x7ab1e000 + i;
        for (int i = 0; i < 5; i++) {
          nodes[i].tag = 0xc0de0000 + i;
          nodes[i].next = i < 4 ? &nodes[i + 1] : 0;
        }
        printf("ready known=%p size=%zu tp=%p table=%p nodes=%p\\n", (void *) &known,
               sizeof known, (void *) pthread_self(), (void *) table, (void *) nodes);
        fflush(stdout);
        if (argc > 1 && strcmp(argv[1], "syscall") == 0) {
          int fd = open("/dev/null", O_WRONLY);
          for (;;) counter += write(fd, "x", 1);
        }
        if (argc > 1 && strcmp(argv[1], "exit") == 0) {
          // A 1 GiB populated mapping makes the exit's unmapping take tens of ms of CPU.
          usleep(200000);
          void *m = mmap(0, 1L << 30, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
          struct timespec t;
          clock_gettime(CLOCK_MONOTONIC, &t);
          printf("exiting %lld\\n", (long long) t.tv_sec * 1000000000LL + t.tv_nsec);
          fflush(stdout);
          _exit(m == MAP_FAILED);
        }
        if (argc > 1 && strcmp(argv[1], "edge") == 0) {
          // rsp 64 bytes over a page boundary with the page below never touched: the red zone's
          // first chunk faults while the 7 pages from rsp up are resident.
          char *m = mmap(0, 8 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
          memset(m + 4096, 0, 7 * 4096);
          uint64_t *sp = (uint64_t *) (m + 4096 + 64);
          *sp = 0x5eed5eed5eed5eedULL;
          __asm__ volatile("mov %0, %%rsp\\n1: incq counter(%%rip)\\njmp 1b" :: "r"(sp));
        }
        deep();
      }
      """;

  @TempDir static Path dir;
  private static Path binary;

  @BeforeAll
  static void compile() throws Exception {
    String disabled = System.getenv(BpfSupport.DISABLE_ENV);
    assumeTrue(disabled == null || disabled.isEmpty(), "BPF disabled by the environment");
    assertEquals(Optional.empty(), BpfSupport.unavailableReason());
    Path src = dir.resolve("spin.c");
    Files.writeString(src, SOURCE);
    binary = dir.resolve("spin");
    // ProcessBuilder is fine here: gcc is never sampled.
    Process gcc = new ProcessBuilder("gcc", "-O1", "-g", "-o", binary.toString(), src.toString())
        .inheritIO().start();
    assertEquals(0, gcc.waitFor(), "gcc");
  }

  @Test
  void spinningProcessGetsRegistersAndStack() throws Exception {
    try (Workload w = Workload.start("spin"); TickCapture capture = open()) {
      capture.addTarget(w.pid(), STACK);
      List<Rec> records = collect(capture, RECORDS);
      Map<String, Long> counters = capture.counters();

      assertTrue(records.size() >= RECORDS / 2, "records: " + records.size());
      long inExecutable = 0;
      for (Rec r : records) {
        assertEquals(w.pid(), r.tgid(), "only the target's ticks");
        assertEquals(w.pid(), r.tid());
        assertUser(r);
        assertEquals(STACK, r.stackLen(), "all resident: every page-aligned chunk copied");
        assertTrue(w.inExecutable(r.atRsp()), "spin's return address into deep() at rsp");
        inExecutable += w.inExecutable(r.rip()) ? 1 : 0;
        assertTrue(w.inStack(r.rsp()), "rsp in [stack]");
      }
      assertTrue(inExecutable > records.size() / 2, "rip in the spin loop: " + inExecutable);
      assertTrue(counters.get("ticks") >= counters.get("records"), counters.toString());
      assertTrue(counters.get("records") >= records.size(), counters.toString());
      assertEquals(0, counters.get("ring_full"), counters.toString());
      assertEquals(0, counters.get("no_user_regs"), counters.toString());
      ProgramStats stats = capture.programStats();
      if (Files.readString(Path.of("/proc/sys/kernel/bpf_stats_enabled")).strip().equals("0")) {
        assertEquals(new ProgramStats(0, 0), stats);
      } else {
        assertTrue(stats.runCount() >= counters.get("ticks"), stats.toString());
      }
    }
  }

  /** A red zone on a page never touched reads as zeros; the stack above rsp is still copied. */
  @Test
  void aThreadInItsExitIsCountedNotCaptured() throws Exception {
    try (Workload w = Workload.start("exit"); TickCapture capture = open()) {
      capture.addTarget(w.pid(), STACK);
      List<Rec> records = new ArrayList<>();
      WaitStatus status = null;
      long deadline = System.nanoTime() + 20_000_000_000L;
      while (status == null && System.nanoTime() < deadline) {
        capture.poll(50, b -> records.add(Rec.parse(b)));
        status = w.process().poll().orElse(null);
      }
      assertTrue(status != null, "the workload exits");
      capture.poll(0, b -> records.add(Rec.parse(b)));
      long exiting = w.exitingAt();
      // Its exit unmaps 1 GiB (about 60 ms of CPU here): several 99 Hz ticks land in it. One
      // tick may land between the clock read and exit_group's entry, which is the program's.
      long after = records.stream().filter(r -> r.timeNs() > exiting).count();
      Map<String, Long> counters = capture.counters();
      assertTrue(after <= 1, after + " records after the exit began; " + counters);
      assertTrue(counters.get("thread_exiting") >= 2, counters.toString());
    }
  }

  @Test
  void redZoneOnAnUntouchedPageDoesNotLoseTheStack() throws Exception {
    try (Workload w = Workload.start("edge"); TickCapture capture = open()) {
      capture.addTarget(w.pid(), STACK);
      List<Rec> records = collect(capture, RECORDS / 4);
      assertTrue(records.size() >= RECORDS / 8, "records: " + records.size());
      for (Rec r : records) {
        assertEquals(64, r.rsp() & 4095, "rsp " + Long.toHexString(r.rsp()));
        assertUser(r);
        assertEquals(STACK, r.stackLen(), "red zone zeroed, the rest copied from rsp");
        assertEquals(0x5eed5eed5eed5eedL, r.atRsp());
      }
      assertEquals(0, capture.counters().get("stack_unreadable"), capture.counters().toString());
    }
  }

  /**
   * A ring nobody drains: once it is full every further record is counted in the kernel as
   * ring_full (the loss the summary shows as bpf_ring_full), none silently missing.
   */
  @Test
  void aFullRingCountsEveryRecordItDrops() throws Exception {
    try (Workload w = Workload.start("spin"); TickCapture capture = TickCapture.open(999, 1 << 16)) {
      capture.addTarget(w.pid(), STACK);
      long deadline = System.nanoTime() + 10_000_000_000L;
      Map<String, Long> counters = capture.counters();
      while (counters.get("ring_full") < 20 && System.nanoTime() < deadline) {
        Thread.sleep(100);
        counters = capture.counters();
      }
      assertTrue(counters.get("ring_full") >= 20, counters.toString());
      capture.removeTarget(w.pid()); // the counts stand still from here
      Thread.sleep(50);
      int delivered = capture.poll(0, r -> { });
      counters = capture.counters();
      assertTrue(delivered > 0 && delivered <= (1 << 16) / (STACK / 2), "delivered " + delivered);
      assertEquals(delivered, counters.get("records"), counters.toString());
      // Every tick is a record, a loss to the full ring, or one without user registers.
      assertEquals(counters.get("ticks"), counters.get("records") + counters.get("ring_full")
          + counters.get("no_user_regs"), counters.toString());
    }
  }

  @Test
  void ticksInSystemCallsUseTheSavedUserRegisters() throws Exception {
    try (Workload w = Workload.start("syscall"); TickCapture capture = open()) {
      capture.addTarget(w.pid(), STACK);
      List<Rec> records = collect(capture, RECORDS);

      assertTrue(records.size() >= RECORDS / 2, "records: " + records.size());
      long inKernel = 0;
      for (Rec r : records) {
        assertEquals(w.pid(), r.tgid());
        assertUser(r);
        assertTrue(w.inStack(r.rsp()), "rsp in [stack]");
        // main's frame is near the stack top, where exec leaves a random gap of untouched
        // pages: the chunks stop exactly at the first page that is not in memory.
        assertEquals(w.readableFrom(r.stackStart(), STACK), r.stackLen());
        inKernel += r.inKernel() ? 1 : 0;
      }
      assertTrue(inKernel > 0, "no tick landed in write(2) of " + records.size());
      assertEquals(0, capture.counters().get("no_user_regs"));
    }
  }

  @Test
  void plansCopyCheckAndStop() throws Exception {
    try (Workload w = Workload.start("spin"); TickCapture capture = open()) {
      long known = w.known();
      Plan copy = new Plan()
          .step(OP_CONST, 0, NONE, NONE, NONE, 0, 0, known)
          .step(OP_LOAD, 1, 0, NONE, NONE, 8, 0, 0)
          .step(OP_CONST, 2, NONE, NONE, NONE, 0, 0, MAGIC)
          .step(OP_CHECK_EQ, NONE, 1, 2, NONE, 0, 0, 0)
          .step(OP_COPY, NONE, 0, NONE, NONE, 0, 72, 0);
      Plan failedCheck = new Plan()
          .step(OP_CONST, 0, NONE, NONE, NONE, 0, 0, 1)
          .step(OP_CONST, 1, NONE, NONE, NONE, 0, 0, 2)
          .step(OP_CHECK_EQ, NONE, 0, 1, NONE, 0, 0, 0)
          .step(OP_COPY, NONE, 0, NONE, NONE, 0, 8, 0);
      Plan failedLoad = new Plan()
          .step(OP_CONST, 0, NONE, NONE, NONE, 0, 0, 8)
          .step(OP_LOAD, 1, 0, NONE, NONE, 8, 0, 0);
      Plan failedCopy = new Plan()
          .step(OP_CONST, 0, NONE, NONE, NONE, 0, 0, 8)
          .step(OP_COPY, NONE, 0, NONE, NONE, 0, 64, 0);
      capture.setPlan(w.pid(), 0, copy.bytes());
      capture.setPlan(w.pid(), 1, failedCheck.bytes());
      capture.setPlan(w.pid(), 2, failedLoad.bytes());
      capture.setPlan(w.pid(), 3, failedCopy.bytes());
      capture.addTarget(w.pid(), 4096);
      List<Rec> records = collect(capture, RECORDS);
      Map<String, Long> counters = capture.counters();

      assertTrue(records.size() >= RECORDS / 2, "records: " + records.size());
      ByteBuffer expected = ByteBuffer.allocate(72).order(ByteOrder.LITTLE_ENDIAN);
      expected.putLong(MAGIC).putLong(known).put(TEXT.getBytes(StandardCharsets.US_ASCII));
      expected.putLong(64, 0x1122334455667788L);
      for (Rec r : records) {
        assertEquals(4, r.planCount());
        assertEquals(0, r.stopStep(0), "the copy plan ran to its end");
        assertEquals(3, r.stopStep(1), "stopped at the check (step 2)");
        assertEquals(2, r.stopReason(1), "check");
        assertEquals(2, r.stopStep(2), "stopped at the load (step 1)");
        assertEquals(1, r.stopReason(2), "load");
        assertEquals(0, r.stopStep(3), "a failed copy does not stop its plan");
        assertEquals(2, r.regions().size());
        Region region = r.regions().get(0);
        assertEquals(known, region.address());
        assertEquals(0, region.plan());
        assertEquals(4, region.step());
        assertEquals(5, region.label(), "the test labels each step with its index + 1");
        assertArrayEquals(expected.array(), region.bytes());
        Region empty = r.regions().get(1);
        assertEquals(8, empty.address());
        assertEquals(3, empty.plan());
        assertEquals(1, empty.step());
        assertEquals(0, empty.bytes().length);
      }
      long n = records.size();
      assertTrue(counters.get("plan_check_failed") >= n, counters.toString());
      assertTrue(counters.get("plan_load_failed") >= n, counters.toString());
      assertTrue(counters.get("copy_failed") >= n, counters.toString());
      assertEquals(0, counters.get("plan_invalid"), counters.toString());
      assertEquals(0, counters.get("record_full"), counters.toString());

      capture.clearPlans(w.pid());
      capture.poll(0, b -> {});
      List<Rec> after = collect(capture, 5);
      assertFalse(after.isEmpty());
      assertTrue(after.stream().allMatch(r -> r.planCount() == 0 && r.regions().isEmpty()));
    }
  }

  /**
   * The thread-pointer step reads the FS base the target's thread runs with: the value
   * pthread_self() printed, and the start of glibc's thread block, whose header holds the same
   * address again at +0x10 (tcbhead_t.self), copied through it at the tick.
   */
  @Test
  void theThreadPointerStepReadsTheThreadsFsBase() throws Exception {
    try (Workload w = Workload.start("spin"); TickCapture capture = open()) {
      long tp = w.threadPointer();
      Plan plan = new Plan()
          .step(OP_TP, 0, NONE, NONE, NONE, 0, 0, 0)
          .step(OP_COPY, NONE, 0, NONE, NONE, 0, 8, 0x10);
      capture.setPlan(w.pid(), 0, plan.bytes());
      capture.addTarget(w.pid(), 4096);
      List<Rec> records = collect(capture, RECORDS);
      assertTrue(records.size() >= RECORDS / 2, "records: " + records.size());
      for (Rec r : records) {
        assertEquals(0, r.stopStep(0), "the plan ran to its end");
        Region self = r.regions().get(0);
        assertEquals(tp + 0x10, self.address(), "the copy's address: FS base + 0x10");
        assertEquals(tp, ByteBuffer.wrap(self.bytes()).order(ByteOrder.LITTLE_ENDIAN).getLong(),
            "tcbhead_t.self");
        assertEquals(tp, r.threadPointer(), "the record's own thread pointer");
      }
    }
  }

  /**
   * The data-following steps (API 1.6), compiled by the host's encoder, run in the kernel: an
   * indexed load and the same element reached by shift and add, checked against the values the
   * program wrote; a chain over a linked list in two steps, the second going on where the first
   * stopped; an indexed load of an unmapped address stops its plan. TickCopiesTest runs the same
   * plans through the kit.
   */
  @Test
  void plansFollowData() throws Exception {
    try (Workload w = Workload.start("spin"); TickCapture capture = open()) {
      long table = w.printed("table");
      long nodes = w.printed("nodes");
      CapturePlan arithmetic = CapturePlan.builder()
          .constant("base", table)
          .constant("index", 5)
          .loadIndexed("value", "base", "index", 8, 0, 8)
          .constant("want", 0x7ab1e005L)
          .checkEquals("value", "want")
          .shiftLeft("offset", "index", 3)
          .addSlots("address", "base", "offset")
          .load("value", "address", 0, 8)
          .checkEquals("value", "want")
          .multiply("value", "index", 8)
          .checkEquals("value", "offset")
          .shiftRight("value", "offset", 3)
          .checkEquals("value", "index")
          .copy("address", 0, 8, "element")
          .build();
      CapturePlan chain = CapturePlan.builder()
          .constant("head", nodes)
          .chain("rest", "head", 0, 16, 8, 3, "node")
          .constant("fourth", nodes + 48)
          .checkEquals("rest", "fourth")
          .chain("end", "rest", 0, 8, 8, CapturePlan.MAX_CHAIN_HOPS, "node")
          .constant("zero", 0)
          .checkEquals("end", "zero")
          .build();
      CapturePlan unmapped = CapturePlan.builder()
          .constant("base", 8)
          .constant("index", 1)
          .loadIndexed("value", "base", "index", 8, 0, 8)
          .build();
      capture.setPlan(w.pid(), 0, PlanEncoder.encode(arithmetic));
      capture.setPlan(w.pid(), 1, PlanEncoder.encode(chain));
      capture.setPlan(w.pid(), 2, PlanEncoder.encode(unmapped));
      capture.addTarget(w.pid(), 4096);
      List<Rec> records = collect(capture, RECORDS);
      Map<String, Long> counters = capture.counters();

      assertTrue(records.size() >= RECORDS / 2, "records: " + records.size());
      for (Rec r : records) {
        assertEquals(3, r.planCount());
        assertEquals(0, r.stopStep(0), "every check of the arithmetic held");
        assertEquals(0, r.stopStep(1), "the chain ended where the list does");
        assertEquals(3, r.stopStep(2), "stopped at the indexed load (step 2)");
        assertEquals(1, r.stopReason(2), "load");
        assertEquals(6, r.regions().size());
        Region element = r.regions().get(0);
        assertEquals(table + 40, element.address());
        assertEquals(0x7ab1e005L, longAt(element.bytes(), 0));
        for (int i = 0; i < 5; i++) {
          Region node = r.regions().get(1 + i);
          assertEquals(nodes + 16L * i, node.address());
          assertEquals(1, node.plan());
          assertEquals(i < 3 ? 1 : 4, node.step());
          assertEquals(i < 3 ? 16 : 8, node.bytes().length);
          assertEquals(0xc0de0000L + i, longAt(node.bytes(), 0));
        }
      }
      assertEquals(0, counters.get("plan_invalid"), counters.toString());
      assertEquals(0, counters.get("chain_next_unreadable"), counters.toString());
    }
  }

  /**
   * The thread-id step (API 2.0) gives the id the thread has in its own pid namespace, as a
   * runtime stores it: the spin program's main thread outside any namespace (its pid), and the
   * same program started in a new pid namespace, where it is 1 while polystack targets it by its
   * host pid. A plan checking another id stops at the check.
   */
  @Test
  void theThreadIdStepReadsTheIdInTheThreadsOwnPidNamespace() throws Exception {
    try (Workload w = Workload.start("spin"); TickCapture capture = open()) {
      assertThreadId(capture, w.pid(), w.pid());
    }
    Path out = Files.createTempFile(dir, "spin-ns", ".out");
    try (ChildProcess unshare = Launcher.command("unshare", "--pid", "--fork", "--kill-child",
        binary.toString(), "spin").stdout(out).start(); TickCapture capture = open()) {
      long deadline = System.nanoTime() + 5_000_000_000L;
      while (!Files.readString(out).contains("ready")) {
        assertTrue(System.nanoTime() < deadline, "workload never got ready in its namespace");
        Thread.sleep(5);
      }
      String children = Files.readString(Path.of("/proc/" + unshare.pid() + "/task/"
          + unshare.pid() + "/children")).trim();
      int inner = Integer.parseInt(children);
      assertThreadId(capture, inner, 1);
    }
  }

  /** Ticks of {@code pid}'s main thread see {@code id}; a plan wanting {@code id + 1} stops. */
  private static void assertThreadId(TickCapture capture, int pid, long id) {
    CapturePlan mine = CapturePlan.builder()
        .threadId("tid")
        .constant("want", id)
        .checkEquals("tid", "want")
        .build();
    CapturePlan other = CapturePlan.builder()
        .threadId("tid")
        .constant("want", id + 1)
        .checkEquals("tid", "want")
        .build();
    capture.setPlan(pid, 0, PlanEncoder.encode(mine));
    capture.setPlan(pid, 1, PlanEncoder.encode(other));
    capture.addTarget(pid, 4096);
    List<Rec> records = collect(capture, RECORDS);
    assertTrue(records.size() >= RECORDS / 2, "records: " + records.size());
    for (Rec r : records) {
      assertEquals(pid, r.tid(), "the spin program ticks on its main thread");
      assertEquals(0, r.stopStep(0), "the thread's own id held");
      assertEquals(3, r.stopStep(1), "another id stops at the check (step 2)");
    }
  }

  private static long longAt(byte[] b, int at) {
    return ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN).getLong(at);
  }

  @Test
  void brokenObjectFailsInOneLine() throws Exception {
    Path garbage = dir.resolve("garbage.bpf.o");
    Files.write(garbage, "this is not an ELF file".getBytes(StandardCharsets.US_ASCII));
    System.setProperty(TickCapture.OBJECT_PROPERTY, garbage.toString());
    try {
      BpfLoadException e = assertThrows(BpfLoadException.class, TickCaptureTest::open);
      assertFalse(e.getMessage().contains("\n"), e.getMessage());
      assertTrue(e.getMessage().startsWith("opening the BPF object"), e.getMessage());
    } finally {
      System.clearProperty(TickCapture.OBJECT_PROPERTY);
    }
  }

  @Test
  void rejectsMalformedRequests() throws Exception {
    try (TickCapture capture = open()) {
      assertThrows(IllegalArgumentException.class, () -> capture.setPlan(1, 0, new byte[775]));
      assertThrows(IllegalArgumentException.class, () -> capture.setPlan(1, 4, new byte[1160]));
      assertThrows(IllegalArgumentException.class, () -> capture.addTarget(1, 32769));
      capture.close();
      capture.close();
      assertThrows(IllegalStateException.class, () -> capture.addTarget(1, 0));
    }
  }

  private static TickCapture open() throws BpfLoadException {
    return TickCapture.open(RATE, 1 << 22);
  }

  private static void assertUser(Rec r) {
    assertTrue(r.rip() > 0 && r.rip() < 1L << 47, "rip " + Long.toHexString(r.rip()));
    assertTrue(r.rsp() > 0 && r.rsp() < 1L << 47, "rsp " + Long.toHexString(r.rsp()));
    assertTrue(r.stackLen() > 0, "stack copied");
    assertEquals(r.rsp() - 128, r.stackStart());
  }

  /**
   * Polls until {@code wanted} records came (about 1 s at 99 Hz on an idle machine) or 5 s
   * passed: a busy CI machine gives the workload less CPU and so fewer ticks.
   */
  private static List<Rec> collect(TickCapture capture, int wanted) {
    List<Rec> out = new ArrayList<>();
    long deadline = System.nanoTime() + 5_000_000_000L;
    while (out.size() < wanted && System.nanoTime() < deadline) {
      capture.poll(50, b -> out.add(Rec.parse(b)));
    }
    return out;
  }

  // Plan encoding by hand (struct step in tick_capture.bpf.c), independent of the host's encoder.
  private static final int OP_CONST = 2;
  private static final int OP_LOAD = 7;
  private static final int OP_CHECK_EQ = 9;
  private static final int OP_COPY = 12;
  private static final int OP_TP = 13;
  private static final int NONE = 0xff;

  private static final class Plan {
    private final ByteBuffer b = ByteBuffer.allocate(1160).order(ByteOrder.LITTLE_ENDIAN);
    private int n;

    Plan step(int op, int dst, int a, int bSlot, int c, int size, int max, long imm) {
      int at = 8 + 24 * n++;
      b.put(at, (byte) op).put(at + 1, (byte) dst).put(at + 2, (byte) a)
          .put(at + 3, (byte) bSlot).put(at + 4, (byte) c).put(at + 5, (byte) size);
      b.putShort(at + 6, (short) n).putInt(at + 8, max).putLong(at + 16, imm);
      b.putInt(0, n);
      return this;
    }

    byte[] bytes() {
      return b.array().clone();
    }
  }

  record Region(long address, int plan, int step, int label, byte[] bytes) {}

  /** The record header fields the tests look at (struct record_header). */
  record Rec(int tgid, int tid, boolean inKernel, long[] regs, long stackStart, int stackLen,
      long atRsp, int planCount, byte[] stops, List<Region> regions, long threadPointer,
      long timeNs) {
    long rip() {
      return regs[16];
    }

    long rsp() {
      return regs[7];
    }

    int stopStep(int plan) {
      return stops[plan];
    }

    int stopReason(int plan) {
      return stops[4 + plan];
    }

    static Rec parse(ByteBuffer b) {
      assertEquals(1, b.getShort(0));
      assertEquals(200, b.getShort(2));
      int size = b.getInt(4);
      assertEquals(b.remaining(), size, "record size");
      assertEquals(0, size % 8);
      long[] regs = new long[17];
      for (int i = 0; i < 17; i++) {
        regs[i] = b.getLong(32 + 8 * i);
      }
      int stackLen = b.getInt(176);
      byte[] stops = new byte[8];
      b.get(184, stops);
      List<Region> regions = new ArrayList<>();
      int at = 200 + ((stackLen + 7) & ~7);
      for (int i = 0; i < b.getShort(182); i++) {
        int len = b.getInt(at + 8);
        byte[] bytes = new byte[len];
        b.get(at + 16, bytes);
        regions.add(new Region(b.getLong(at), b.get(at + 12), b.get(at + 13), b.getShort(at + 14),
            bytes));
        at += 16 + ((len + 7) & ~7);
      }
      assertEquals(size, at, "regions fill the record");
      long atRsp = stackLen >= 136 ? b.getLong(200 + 128) : 0;
      assertEquals(4, b.getInt(28) & 4, "a tick record carries its thread pointer");
      return new Rec(b.getInt(8), b.getInt(12), (b.getInt(28) & 1) != 0, regs, b.getLong(168),
          stackLen, atRsp, b.getShort(180), stops, regions, b.getLong(192), b.getLong(16));
    }
  }

  /** The C program, started with stdout to a file; its mappings for address checks. */
  private record Workload(ChildProcess process, Path stdout) implements AutoCloseable {
    static Workload start(String mode) throws Exception {
      Path out = Files.createTempFile(dir, "spin", ".out");
      ChildProcess p = Launcher.command(binary.toString(), mode).stdout(out).start();
      Workload w = new Workload(p, out);
      long deadline = System.nanoTime() + 5_000_000_000L;
      while (!Files.readString(out).contains("ready")) {
        assertTrue(System.nanoTime() < deadline, "workload never got ready");
        Thread.sleep(5);
      }
      return w;
    }

    int pid() {
      return process.pid();
    }

    long known() throws IOException {
      return printed("known");
    }

    /** pthread_self() of the main thread: glibc's struct pthread, where FS points. */
    long threadPointer() throws IOException {
      return printed("tp");
    }

    /** CLOCK_MONOTONIC (the records' clock) when the "exit" workload began to exit. */
    long exitingAt() throws IOException {
      String line = Files.readString(stdout).lines().filter(l -> l.startsWith("exiting "))
          .findFirst().orElseThrow();
      return Long.parseLong(line.substring("exiting ".length()).strip());
    }

    long printed(String name) throws IOException {
      String line = Files.readString(stdout).lines().filter(l -> l.startsWith("ready")).findFirst()
          .orElseThrow();
      String hex = line.replaceAll(".*" + name + "=0x([0-9a-f]+).*", "$1");
      return Long.parseUnsignedLong(hex, 16);
    }

    boolean inExecutable(long addr) throws IOException {
      return mapped(addr, binary.toRealPath().toString(), "x");
    }

    boolean inStack(long addr) throws IOException {
      return mapped(addr, "[stack]", "");
    }

    /** Bytes from {@code start} (at most {@code max}) before the first page not in memory. */
    long readableFrom(long start, int max) throws IOException {
      long end = start;
      try (FileChannel pagemap = FileChannel.open(Path.of("/proc/" + pid() + "/pagemap"))) {
        ByteBuffer entry = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN);
        while (end < start + max) {
          entry.clear();
          pagemap.read(entry, (end >>> 12) * 8);
          if (entry.position() < 8 || entry.getLong(0) >= 0) { // bit 63: present
            break;
          }
          end = (end | 4095) + 1;
        }
      }
      return Math.min(end, start + max) - start;
    }

    private boolean mapped(long addr, String path, String perm) throws IOException {
      for (String line : Files.readAllLines(Path.of("/proc/" + pid() + "/maps"))) {
        String[] f = line.trim().split("\\s+", 6);
        String[] range = f[0].split("-");
        long lo = Long.parseUnsignedLong(range[0], 16);
        long hi = Long.parseUnsignedLong(range[1], 16);
        if (f.length > 5 && f[5].equals(path) && f[1].contains(perm) && addr >= lo && addr < hi) {
          return true;
        }
      }
      return false;
    }

    @Override
    public void close() {
      process.close();
    }
  }
}
