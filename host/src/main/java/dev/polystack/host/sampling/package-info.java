/**
 * What every sampler and every session shares: the stack walk ({@link
 * dev.polystack.host.sampling.StackWalker}), the copies of stack and pages a walk reads, raw
 * stacks and samples, options and how a sampling loop ends. The samplers live in {@code
 * .ptrace} (stops each sampled thread) and {@code .nostop} (bpf and perf: never stop it); the
 * sessions that run them in {@code dev.polystack.host.session}. docs/architecture.md has the map.
 */
package dev.polystack.host.sampling;
