#!/usr/bin/env bash
# What the kernel's verifier does with polystack's BPF programs at each start: instructions it
# processed, states it kept, and the load's wall time, per program, for the committed object and
# optionally for the object of another revision, loaded alternately in one run (load figures are
# ratios: a busy machine makes every load slower).
#
# Usage: bench/run-bpf-load.sh [REV] [ROUNDS]   (REV: a git revision to compare, e.g. HEAD~1;
# ROUNDS: loads per program and object, default 3). Needs root, gcc and libbpf-dev (no clang).
# Figures: docs/benchmarks.md, "bpf mode start-up".
set -euo pipefail
root="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)"
if [ "${1:-}" = --help ] || [ "${1:-}" = -h ]; then
  sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'
  exit 0
fi
rev=${1:-}
rounds=${2:-3}
object=host/src/main/resources/dev/polystack/host/bpf/tick_capture.bpf.o
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
gcc -O2 -o "$tmp/verify" "$root/bench/bpf-load/verify.c" -lbpf
objects=("now=$root/$object")
if [ -n "$rev" ]; then
  git -C "$root" show "$rev:$object" > "$tmp/then.o"
  objects+=("$rev=$tmp/then.o")
fi
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
printf 'object\tprogram\tprocessed_insns\ttotal_states\tload_s\n'
for ((i = 0; i < rounds; i++)); do
  for entry in "${objects[@]}"; do
    for program in tick_capture alloc_probe; do
      printf '%s\t' "${entry%%=*}"
      "$tmp/verify" "${entry#*=}" "$program"
    done
  done
done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
