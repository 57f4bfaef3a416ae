package dev.polystack.host.sampling;

import dev.polystack.plugin.api.Registers;
import dev.polystack.plugin.api.RemoteMemory;
import dev.polystack.plugin.api.ThreadContext;

/** One thread as captured for one sample; handed to plug-ins as their {@link ThreadContext}. */
public record CapturedThread(int pid, int tid, Registers registers, RemoteMemory memory,
    long stackStart, int stackLength) implements ThreadContext {
}
