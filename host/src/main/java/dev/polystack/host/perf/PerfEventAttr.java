package dev.polystack.host.perf;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * Immutable {@code struct perf_event_attr}. Encoded as PERF_ATTR_SIZE_VER8 (136 bytes, up to
 * config3); the kernel accepts larger-than-known sizes only if the extra bytes are zero, and
 * smaller ones as older versions, so 136 works on 6.3+ kernels and is what 6.18 expects.
 *
 * <p>Flag bit positions were checked against /usr/include/linux/perf_event.h with a compiled
 * probe: note remove_on_exec is bit 36 and sigtrap bit 37.
 */
public final class PerfEventAttr {
  public static final int SIZE = 136;

  // Bit positions in the flags word at offset 40.
  static final int BIT_DISABLED = 0;
  static final int BIT_INHERIT = 1;
  static final int BIT_PINNED = 2;
  static final int BIT_EXCLUSIVE = 3;
  static final int BIT_EXCLUDE_USER = 4;
  static final int BIT_EXCLUDE_KERNEL = 5;
  static final int BIT_EXCLUDE_HV = 6;
  static final int BIT_EXCLUDE_IDLE = 7;
  static final int BIT_MMAP = 8;
  static final int BIT_COMM = 9;
  static final int BIT_FREQ = 10;
  static final int BIT_INHERIT_STAT = 11;
  static final int BIT_ENABLE_ON_EXEC = 12;
  static final int BIT_TASK = 13;
  static final int BIT_WATERMARK = 14;
  static final int BIT_PRECISE_IP = 15; // two bits
  static final int BIT_MMAP_DATA = 17;
  static final int BIT_SAMPLE_ID_ALL = 18;
  static final int BIT_MMAP2 = 23;
  static final int BIT_COMM_EXEC = 24;
  static final int BIT_USE_CLOCKID = 25;
  static final int BIT_CONTEXT_SWITCH = 26;
  static final int BIT_INHERIT_THREAD = 35;
  static final int BIT_REMOVE_ON_EXEC = 36;
  static final int BIT_SIGTRAP = 37;

  private final int type;
  private final long config;
  private final long periodOrFreq;
  private final long sampleType;
  private final long readFormat;
  private final long flags;
  private final int wakeupEvents;
  private final int bpType;
  private final long config1;
  private final long config2;
  private final long branchSampleType;
  private final long sampleRegsUser;
  private final int sampleStackUser;
  private final int clockid;
  private final long sigData;
  private final long config3;

  private PerfEventAttr(Builder b) {
    this.type = b.type;
    this.config = b.config;
    this.periodOrFreq = b.periodOrFreq;
    this.sampleType = b.sampleType;
    this.readFormat = b.readFormat;
    this.flags = b.flags;
    this.wakeupEvents = b.wakeupEvents;
    this.bpType = b.bpType;
    this.config1 = b.config1;
    this.config2 = b.config2;
    this.branchSampleType = b.branchSampleType;
    this.sampleRegsUser = b.sampleRegsUser;
    this.sampleStackUser = b.sampleStackUser;
    this.clockid = b.clockid;
    this.sigData = b.sigData;
    this.config3 = b.config3;
  }

  /**
   * A user-space execution breakpoint on the 8 bytes at {@code address}, counted at every hit,
   * created disabled and removed at exec (the code the address names does not outlive it): what
   * the vDSO tracer and {@code probe --hw} both arm.
   */
  public static Builder executionBreakpoint(long address) {
    return builder()
        .breakpoint(PerfConstants.HW_BREAKPOINT_X, address, 8)
        .samplePeriod(1)
        .excludeKernel(true)
        .excludeHv(true)
        .removeOnExec(true)
        .disabled(true);
  }

  /**
   * A user-space read/write watchpoint on the {@code length} bytes at {@code address} (x86 has
   * no read-only data breakpoint), counted at every access, created disabled and removed at
   * exec: what {@code probe} arms for a runtime-level site (a Lua function's first bytecode).
   */
  public static Builder dataBreakpoint(long address, int length) {
    return builder()
        .breakpoint(PerfConstants.HW_BREAKPOINT_RW, address, length)
        .samplePeriod(1)
        .excludeKernel(true)
        .excludeHv(true)
        .removeOnExec(true)
        .disabled(true);
  }

  public static Builder builder() {
    return new Builder();
  }

  public int type() {
    return type;
  }

  public long config() {
    return config;
  }

  public long sampleType() {
    return sampleType;
  }

  public long sampleRegsUser() {
    return sampleRegsUser;
  }

  public int sampleStackUser() {
    return sampleStackUser;
  }

  public long flags() {
    return flags;
  }

  public boolean flag(int bit) {
    return (flags & (1L << bit)) != 0;
  }

  /** The exact bytes handed to perf_event_open. */
  public byte[] encode() {
    ByteBuffer b = ByteBuffer.allocate(SIZE).order(ByteOrder.LITTLE_ENDIAN);
    b.putInt(0, type);
    b.putInt(4, SIZE);
    b.putLong(8, config);
    b.putLong(16, periodOrFreq);
    b.putLong(24, sampleType);
    b.putLong(32, readFormat);
    b.putLong(40, flags);
    b.putInt(48, wakeupEvents);
    b.putInt(52, bpType);
    b.putLong(56, config1);
    b.putLong(64, config2);
    b.putLong(72, branchSampleType);
    b.putLong(80, sampleRegsUser);
    b.putInt(88, sampleStackUser);
    b.putInt(92, clockid);
    b.putLong(120, sigData);
    b.putLong(128, config3);
    return b.array();
  }

  /** Builder; {@link #build()} validates combinations the kernel would reject with EINVAL. */
  public static final class Builder {
    private int type = PerfConstants.TYPE_SOFTWARE;
    private long config;
    private long periodOrFreq;
    private long sampleType;
    private long readFormat;
    private long flags = 1L << BIT_DISABLED;
    private int wakeupEvents;
    private int bpType;
    private long config1;
    private long config2;
    private long branchSampleType;
    private long sampleRegsUser;
    private int sampleStackUser;
    private int clockid;
    private long sigData;
    private long config3;

    private Builder() {}

    public Builder type(int type) {
      this.type = type;
      return this;
    }

    public Builder config(long config) {
      this.config = config;
      return this;
    }

    /** Sample every {@code period} events; clears freq mode. */
    public Builder samplePeriod(long period) {
      this.periodOrFreq = period;
      return setFlag(BIT_FREQ, false);
    }

    /** Sample at about {@code hz} per second; sets freq mode. */
    public Builder sampleFreq(long hz) {
      this.periodOrFreq = hz;
      return setFlag(BIT_FREQ, true);
    }

    public Builder sampleType(long sampleType) {
      this.sampleType = sampleType;
      return this;
    }

    public Builder readFormat(long readFormat) {
      this.readFormat = readFormat;
      return this;
    }

    /** Starts disabled (the default) so the caller can mmap before the first sample. */
    public Builder disabled(boolean v) {
      return setFlag(BIT_DISABLED, v);
    }

    public Builder inherit(boolean v) {
      return setFlag(BIT_INHERIT, v);
    }

    /** With inherit: only threads (CLONE_THREAD) inherit the event, not fork children. */
    public Builder inheritThread(boolean v) {
      return setFlag(BIT_INHERIT_THREAD, v);
    }

    public Builder excludeUser(boolean v) {
      return setFlag(BIT_EXCLUDE_USER, v);
    }

    public Builder excludeKernel(boolean v) {
      return setFlag(BIT_EXCLUDE_KERNEL, v);
    }

    public Builder excludeHv(boolean v) {
      return setFlag(BIT_EXCLUDE_HV, v);
    }

    public Builder excludeIdle(boolean v) {
      return setFlag(BIT_EXCLUDE_IDLE, v);
    }

    public Builder mmap(boolean v) {
      return setFlag(BIT_MMAP, v);
    }

    public Builder mmap2(boolean v) {
      return setFlag(BIT_MMAP2, v);
    }

    public Builder comm(boolean v) {
      return setFlag(BIT_COMM, v);
    }

    public Builder task(boolean v) {
      return setFlag(BIT_TASK, v);
    }

    /** PERF_RECORD_COMM records say when they come from an exec (misc COMM_EXEC). */
    public Builder commExec(boolean v) {
      return setFlag(BIT_COMM_EXEC, v);
    }

    public Builder enableOnExec(boolean v) {
      return setFlag(BIT_ENABLE_ON_EXEC, v);
    }

    public Builder sampleIdAll(boolean v) {
      return setFlag(BIT_SAMPLE_ID_ALL, v);
    }

    public Builder contextSwitch(boolean v) {
      return setFlag(BIT_CONTEXT_SWITCH, v);
    }

    public Builder removeOnExec(boolean v) {
      return setFlag(BIT_REMOVE_ON_EXEC, v);
    }

    /** Synchronous SIGTRAP on overflow; the kernel requires remove_on_exec with it. */
    public Builder sigtrap(boolean v) {
      return setFlag(BIT_SIGTRAP, v);
    }

    public Builder preciseIp(int level) {
      if (level < 0 || level > 3) {
        throw new IllegalArgumentException("precise_ip must be 0..3: " + level);
      }
      flags = (flags & ~(3L << BIT_PRECISE_IP)) | ((long) level << BIT_PRECISE_IP);
      return this;
    }

    /** Wake poll() after this many records (wakeup_events; clears watermark mode). */
    public Builder wakeupEvents(int n) {
      this.wakeupEvents = n;
      return setFlag(BIT_WATERMARK, false);
    }

    /** Wake poll() once this many bytes are in the ring (wakeup_watermark). */
    public Builder wakeupWatermark(int bytes) {
      this.wakeupEvents = bytes;
      return setFlag(BIT_WATERMARK, true);
    }

    /** Hardware breakpoint: {@code bpType} from HW_BREAKPOINT_*, address and length. */
    public Builder breakpoint(int bpType, long address, long length) {
      this.type = PerfConstants.TYPE_BREAKPOINT;
      this.config = 0;
      this.bpType = bpType;
      this.config1 = address;
      this.config2 = length;
      return this;
    }

    public Builder config1(long v) {
      this.config1 = v;
      return this;
    }

    public Builder config2(long v) {
      this.config2 = v;
      return this;
    }

    public Builder config3(long v) {
      this.config3 = v;
      return this;
    }

    public Builder branchSampleType(long v) {
      this.branchSampleType = v;
      return this;
    }

    /** Bit mask of PerfConstants.REG_* to capture with SAMPLE_REGS_USER. */
    public Builder sampleRegsUser(long mask) {
      this.sampleRegsUser = mask;
      return this;
    }

    /** Bytes of user stack to copy with SAMPLE_STACK_USER; must be a multiple of 8. */
    public Builder sampleStackUser(int bytes) {
      this.sampleStackUser = bytes;
      return this;
    }

    public Builder clockid(int clockid) {
      this.clockid = clockid;
      return setFlag(BIT_USE_CLOCKID, true);
    }

    public Builder sigData(long v) {
      this.sigData = v;
      return this;
    }

    public PerfEventAttr build() {
      if (sampleStackUser < 0 || sampleStackUser % 8 != 0) {
        throw new IllegalArgumentException("sample_stack_user must be a non-negative multiple of 8");
      }
      if ((sampleType & PerfConstants.SAMPLE_STACK_USER) != 0 && sampleStackUser == 0) {
        throw new IllegalArgumentException("SAMPLE_STACK_USER needs sampleStackUser > 0");
      }
      if ((sampleType & PerfConstants.SAMPLE_REGS_USER) != 0 && sampleRegsUser == 0) {
        throw new IllegalArgumentException("SAMPLE_REGS_USER needs a sampleRegsUser mask");
      }
      if ((flags & (1L << BIT_SIGTRAP)) != 0 && (flags & (1L << BIT_REMOVE_ON_EXEC)) == 0) {
        throw new IllegalArgumentException("sigtrap requires removeOnExec(true)");
      }
      if ((flags & (1L << BIT_FREQ)) != 0 && periodOrFreq <= 0) {
        throw new IllegalArgumentException("sampleFreq must be positive");
      }
      return new PerfEventAttr(this);
    }

    private Builder setFlag(int bit, boolean v) {
      flags = v ? flags | (1L << bit) : flags & ~(1L << bit);
      return this;
    }
  }
}
