/**
 * Embedding polystack in another JVM program: {@link dev.polystack.host.embed.Profiler} runs
 * the host-wide capture pipeline ({@code polystack agent}'s) and hands each interval to an
 * {@link dev.polystack.host.embed.IntervalListener}, as per-process recordings
 * ({@code dev.polystack.otel.model.Recording} with OTLP resource attributes) and as one OTLP
 * profiles request. This package and otel-bridge's model types are the embedding API; every
 * other host package is internal. docs/embedding.md is the reference.
 */
package dev.polystack.host.embed;
