/**
 * The host-wide capture pipeline: one engine captures ticks and process events for every
 * selected process, one process table keyed by pid describes each process once (validated by
 * its identity), one walk stage turns ticks into samples, and one sink per consumer takes each
 * interval's profiles. {@code polystack agent} runs it; docs/architecture.md, "One host-wide
 * pipeline", has the shape.
 */
package dev.polystack.host.pipeline;
