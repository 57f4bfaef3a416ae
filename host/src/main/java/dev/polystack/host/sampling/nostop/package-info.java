/**
 * The samplers that never stop the target: bpf (the kernel captures each tick) and perf (a
 * cpu-clock event per thread with a stack copy), and one bpf capture shared by the processes of
 * a record of several.
 */
package dev.polystack.host.sampling.nostop;
