#!/usr/bin/env python3
"""Phase shares of a folded profile of bench/lua/phases.lua against the program's own timing.

Usage: phase_shares.py PHASES_TXT FOLDED [FOLDED...]
Prints per phase: the program's share, then each profile's share (samples whose stack holds
the phase's function under `step`, the interleaved run's dispatcher, weighted by the folded
counts, over samples holding any phase), and the
total variation distance of each profile from the program's shares.
"""
import re
import sys


def program_shares(path):
    shares = {}
    for line in open(path):
        name, share, _cost = line.split()
        shares[name] = float(share)
    return shares


def profile_shares(path, names):
    counts = {n: 0 for n in names}
    for line in open(path):
        line = line.rstrip("\n")
        if not line:
            continue
        stack, count = line.rsplit(" ", 1)
        frames = [re.sub(r" \(.*\)$", "", f) for f in stack.split(";")]
        if "step" not in frames:
            continue  # start-up and the end: not a phase
        for frame in reversed(frames):  # leaf-most phase function wins
            if frame in counts:
                counts[frame] += int(count)
                break
    total = sum(counts.values())
    return {n: (c / total if total else 0.0) for n, c in counts.items()}, total


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    truth = program_shares(sys.argv[1])
    profiles = [(p, *profile_shares(p, truth)) for p in sys.argv[2:]]
    print("phase program " + " ".join(p for p, _, _ in profiles))
    for name in truth:
        print(name, "%.4f" % truth[name], " ".join("%.4f" % s[name] for _, s, _ in profiles))
    for path, shares, total in profiles:
        tvd = 0.5 * sum(abs(shares[n] - truth[n]) for n in truth)
        print("tvd %s %.4f samples %d" % (path, tvd, total))


if __name__ == "__main__":
    main()
