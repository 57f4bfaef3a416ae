package dev.polystack.otel.counters;

/**
 * Loss reasons in the words of someone reading a profile or a trace: why samples (or call
 * records) are missing, grouped by what they can do about it. Declared in the order the summary
 * prints them.
 */
public enum LossGroup {
  BUSY("while polystack was busy"),
  THREADS_GONE("threads gone"),
  LEARNING("while learning a thread's stack"),
  STACK_UNREADABLE("stack unreadable"),
  COULD_NOT_SAMPLE("polystack could not sample"),
  /** vDSO tracing: a thread or site that did not get its breakpoints. */
  NOT_ARMED("breakpoints not armed"),
  /** vDSO tracing: an entry without its return or a return without its entry. */
  UNPAIRED("entry and return not paired"),
  /** Allocation profiles: sampled allocations without their stack or their in-use tracking. */
  ALLOCATIONS("allocations not fully attributed"),
  /** Where a loss that no declaration names is shown, so it is still counted. */
  OTHER("for other reasons"),
  /** The group of every counter that is not a loss. */
  NONE("");

  private final String words;

  LossGroup(String words) {
    this.words = words;
  }

  /** What the summary's loss line says: {@code 10 while polystack was busy}. */
  public String words() {
    return words;
  }
}
