package dev.polystack.plugin.api;

import java.util.List;

/**
 * Probe sites to arm, and what did not fit, each with why, so the user is told what was left out.
 */
public record ProbePlan(List<ProbeSite> sites, List<String> omitted) {
  public ProbePlan {
    sites = List.copyOf(sites);
    omitted = List.copyOf(omitted);
  }
}
