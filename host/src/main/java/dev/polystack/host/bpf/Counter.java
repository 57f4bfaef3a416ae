package dev.polystack.host.bpf;

import java.util.Locale;

/** The kernel program's counters, in the index order of the {@code counters} map. */
enum Counter {
  TICKS,
  RECORDS,
  RING_FULL,
  NO_USER_REGS,
  STACK_UNREADABLE,
  PLAN_LOAD_FAILED,
  PLAN_CHECK_FAILED,
  COPY_FAILED,
  COPY_PARTIAL,
  RECORD_FULL,
  PLAN_INVALID,
  EVENTS,
  EVENT_RING_FULL,
  FOLLOWED,
  FOLLOW_FULL;

  String key() {
    return name().toLowerCase(Locale.ROOT);
  }
}
