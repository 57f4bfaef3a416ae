/**
 * The sampler that stops each sampled thread for the moment its registers, stack and learned
 * pages are copied, then walks the copy after the resume ({@code record --mode ptrace}).
 */
package dev.polystack.host.sampling.ptrace;
