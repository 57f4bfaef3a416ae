/**
 * {@code polystack probe}: probe sites ({@link dev.polystack.host.monitor.SiteSpec}) resolved
 * in a target's mapped modules ({@link dev.polystack.host.monitor.ProbeSites}) and monitored by
 * the kernel program of {@link dev.polystack.host.bpf.ProbeMonitor} for one run
 * ({@link dev.polystack.host.monitor.ProbeSession}). docs/probes.md.
 */
package dev.polystack.host.monitor;
