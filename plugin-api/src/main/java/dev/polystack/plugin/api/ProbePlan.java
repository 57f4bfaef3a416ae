package dev.polystack.plugin.api;

import java.util.List;

/**
 * Probe sites to arm, and what did not fit, each with why, so the user is told what was left out.
 *
 * @param exits for a request with {@link ProbeRequest#returnInstructions()}: how each planned
 *     function's calls end (since API 1.2; empty otherwise)
 * @since 1.0
 */
public record ProbePlan(List<ProbeSite> sites, List<String> omitted, List<ProbeExit> exits) {
  public ProbePlan {
    sites = List.copyOf(sites);
    omitted = List.copyOf(omitted);
    exits = List.copyOf(exits);
  }

  /** A plan whose returns are learned at run time (the caller's return address). */
  public ProbePlan(List<ProbeSite> sites, List<String> omitted) {
    this(sites, omitted, List.of());
  }
}
