/**
 * Allocation profiles: where the allocator's entry points are in a target (sites), how sampling
 * by bytes is drawn and unbiased, and the per-process table of sampled allocations and their
 * frees (docs/allocations.md).
 */
package dev.polystack.host.alloc;
