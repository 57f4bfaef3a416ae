#!/usr/bin/env bash
# Per-hit cost of a Lua site (docs/probes.md, "Lua sites"): bench/lua/site-calls.lua, run by
# LuaJIT with the JIT off (-joff: every call enters through the interpreter), calls a Lua
# function CALLS times per round and times the rounds with the process's CPU clock, alone
# (none) and under `polystack probe --pid PID lua:site-calls.lua:3` (a read/write watchpoint on
# the function's first bytecode instruction), in ROUNDS interleaved rounds of one process.
# Every probed round's count is checked against the calls made. Prints each round, the medians,
# the ns per hit over none, and the load average. LUAJIT picks the interpreter (default
# /usr/bin/luajit).
#
# Usage: bench/run-lua-site-cost.sh [ROUNDS] [CALLS]   (default 3 rounds of 100000; root)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
rounds=${1:-3}
calls=${2:-100000}
luajit=${LUAJIT:-/usr/bin/luajit}
work=$(mktemp -d)
cp "$root/bench/lua/site-calls.lua" "$work/"
mkfifo "$work/in"
"$luajit" -joff "$work/site-calls.lua" <"$work/in" >"$work/out" &
target=$!
exec 3>"$work/in"
trap 'exec 3>&-; kill $target 2>/dev/null || true; rm -rf "$work"' EXIT
until grep -q ready "$work/out"; do sleep 0.1; done

round() { # prints the ns per call of one round of $calls
  local before
  before=$(grep -c '^calls' "$work/out" || true)
  echo "$calls" >&3
  until [ "$(grep -c '^calls' "$work/out" || true)" -gt "$before" ]; do sleep 0.05; done
  grep '^calls' "$work/out" | tail -1 | awk -v n="$calls" '{printf "%.1f\n", $4 / n}'
}

none=() probed=()
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq 1 "$rounds"); do
  none+=("$(round)")
  json="$work/probe-$r.jsonl"
  "$root/polystack" probe --pid "$target" lua:site-calls.lua:3 --format json -o "$json" \
    2>"$work/probe.err" &
  probe=$!
  until grep -qs '"type":"site"' "$json"; do
    kill -0 $probe 2>/dev/null || { cat "$work/probe.err" >&2; exit 1; }
    sleep 0.1
  done
  probed+=("$(round)")
  kill -INT $probe
  wait $probe
  counted=$(grep -o '"site":"lua:site-calls.lua:3","calls":[0-9]*' "$json" | grep -o '[0-9]*$')
  [ "$counted" = "$calls" ] || { echo "round $r: counted $counted of $calls calls" >&2; exit 1; }
  echo "round $r: none ${none[-1]} ns/call, lua site ${probed[-1]} ns/call (counted $counted)"
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
n=$(median "${none[@]}")
p=$(median "${probed[@]}")
echo "medians: none $n ns/call, lua site $p ns/call; per hit over none: $(awk -v a="$p" -v b="$n" 'BEGIN {printf "%.0f", a - b}') ns"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg); $(date -u '+%Y-%m-%d %H:%M UTC'); $("$luajit" -v | head -1)"
