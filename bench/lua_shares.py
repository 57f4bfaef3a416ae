#!/usr/bin/env python3
"""Lua function shares of one process, from the agent's OTLP profiles and from a record.

Usage: lua_shares.py OTLP_JSON_LINES PID FOLDED
  OTLP_JSON_LINES  the Collector's file exporter output (format: json, one request a line)
  PID              the process whose samples count (its resource's process.pid)
  FOLDED           `polystack record --pid PID --format folded` of the same process

A sample's key is its innermost Lua frame, "name (file)" (the file's base name; LuaJIT's own
C frames above it do not count), or "(no Lua frame)". Each sample weighs the periods it
stands for. Prints both share tables, the largest difference in points, the total variation
distance and the samples on each side; exits 1 if the largest difference is over the bound
given by LUA_SHARES_POINTS (default 3).
"""
import collections
import json
import os
import re
import sys

FOLDED_LUA = re.compile(r"^(.*) \(([^()]*\.lua):\d+\)$")


def otlp_shares(path, pid):
    counts = collections.Counter()
    samples = 0
    with open(path) as f:
        for line in f:
            if not line.strip():
                continue
            req = json.loads(line)
            d = req["dictionary"]
            strings = d["stringTable"]
            for rp in req.get("resourceProfiles", []):
                attrs = rp.get("resource", {}).get("attributes", [])
                rpid = None
                for a in attrs:
                    key = a.get("key") or strings[a.get("keyStrindex", 0)]
                    if key == "process.pid":
                        rpid = int(a["value"].get("intValue", -1))
                if rpid != pid:
                    continue
                for sp in rp.get("scopeProfiles", []):
                    for p in sp.get("profiles", []):
                        for s in p.get("samples", []):
                            stack = d["stackTable"][s.get("stackIndex", 0)]
                            key = "(no Lua frame)"
                            for li in stack.get("locationIndices", []):  # leaf first
                                loc = d["locationTable"][li]
                                lines = loc.get("lines", [])
                                if not lines:
                                    continue
                                fn = d["functionTable"][lines[0].get("functionIndex", 0)]
                                file = strings[fn.get("filenameStrindex", 0)]
                                if file.endswith(".lua"):
                                    key = f"{strings[fn.get('nameStrindex', 0)]} ({os.path.basename(file)})"
                                    break
                            # Timestamps alone: each counts one (OTLP; docs/otlp.md).
                            values = [int(v) for v in s.get("values", [])] or [1] * max(
                                1, len(s.get("timestampsUnixNano", [])))
                            counts[key] += sum(values)
                            samples += len(values)
    return counts, samples


def folded_shares(path):
    counts = collections.Counter()
    samples = 0
    with open(path) as f:
        for line in f:
            stack, _, n = line.rstrip("\n").rpartition(" ")
            if not stack:
                continue
            key = "(no Lua frame)"
            for frame in reversed(stack.split(";")):  # leaf last
                m = FOLDED_LUA.match(frame)
                if m:
                    key = f"{m.group(1)} ({os.path.basename(m.group(2))})"
                    break
            counts[key] += int(n)
            samples += int(n)
    return counts, samples


def main():
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    agent, na = otlp_shares(sys.argv[1], int(sys.argv[2]))
    record, nr = folded_shares(sys.argv[3])
    if not agent or not record:
        print(f"lua_shares: no samples (agent {na}, record {nr}): nothing to compare", file=sys.stderr)
        sys.exit(1)
    ta, tr = sum(agent.values()), sum(record.values())
    keys = sorted(set(agent) | set(record), key=lambda k: -(agent[k] / ta + record[k] / tr))
    print("| innermost Lua function | agent (whole host) | record --pid | difference |")
    print("|---|---|---|---|")
    worst = 0.0
    tvd = 0.0
    for k in keys:
        a, r = 100 * agent[k] / ta, 100 * record[k] / tr
        worst = max(worst, abs(a - r))
        tvd += abs(a - r) / 2
        print(f"| {k} | {a:.1f}% | {r:.1f}% | {a - r:+.1f} |")
    bound = float(os.environ.get("LUA_SHARES_POINTS", "3"))
    print(f"\nsamples: agent {na} ({ta} periods), record {nr}; largest difference {worst:.1f} points"
          f" (goal <= {bound:g}), total variation distance {tvd:.1f} points")
    sys.exit(0 if worst <= bound else 1)


if __name__ == "__main__":
    main()
