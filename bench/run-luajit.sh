#!/usr/bin/env bash
# What sampling a LuaJIT program costs, measured side by side in one run (docs/benchmarks.md):
#   1. target pause per sample at 99 Hz: polystack walking Lua + native frames of a LuaJIT CPU
#      benchmark, polystack walking native frames only (bench/workload.c, no LuaJIT), and the
#      minimal C loop (bench/ptrace_floor.c) on the same LuaJIT benchmark;
#   2. target slowdown at 99 Hz, paired interleaved rounds (median of ROUNDS): no profiler,
#      polystack --mode ptrace, polystack --mode perf (never stops the target), polystack
#      --mode bpf (captures each tick in the kernel, never stops the target), the C floor (the
#      same stops as ptrace, no walk), luajit -jp (in-process), perf record -F 99 -g; and, per
#      configuration, the target's run queue wait (its schedstat), which shows a profiler's
#      threads taking the target's CPU even where the machine's speed swamps the slowdown;
#   3. the time taken from the target at 99 Hz, the same configurations and pairing on
#      bench/lua/lost.lua, which counts the time it did not run (gaps between clock reads every
#      microsecond or so) instead of timing a fixed amount of work: on a VM whose speed wanders
#      by 5-15% from run to run, this is what resolves a difference of a point.
# The benchmark times itself (CLOCK_MONOTONIC via FFI), so profiler start-up is not counted.
# Usage: bench/run-luajit.sh [--halt-poll NS] [--only pause|slowdown|lost] [ROUNDS (default 5)]
#        [N (benchmark rounds, default 600 ~ 3.5 s)]
#        [LOST_SECONDS (length of each lost.lua run, default 5)]
#        bench/run-luajit.sh --help
# --halt-poll NS sets the guest's cpuidle halt polling for the run (root; restored on exit):
# how long an idle vCPU spins before it halts (see bench/lib.sh and docs/benchmarks.md).
# --only SECTION runs one of the three sections (lost alone: about 7 minutes for 10 rounds).
# LUAJIT_OPTS (e.g. -joff) is passed to luajit in every slowdown run: with the JIT on, the
# benchmark's own run time swings by a third from run to run (the trace compiler's choices
# differ), more than any profiler costs; the interpreter alone varies by about 5%.
set -euo pipefail
root="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)"
bench_name=run-luajit
. "$root/bench/lib.sh"
only=""
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) usage "$0"; exit 0 ;;
    --halt-poll) halt_poll="$2"; shift 2 ;;
    --only) only="$2"; shift 2 ;;
    --*) echo "run-luajit.sh: unknown option $1 (try --help)" >&2; exit 2 ;;
    *) break ;;
  esac
done
rounds=${1:-5}
n=${2:-600}
lost_seconds=${3:-5}
case "$only" in
  ""|pause|slowdown|lost) ;;
  *) echo "run-luajit.sh: --only takes pause, slowdown or lost, not '$only'" >&2; exit 2 ;;
esac
want() { [ -z "$only" ] || [ "$only" = "$1" ]; }
[[ "$rounds" =~ ^[1-9][0-9]*$ && "$n" =~ ^[1-9][0-9]*$ && "$lost_seconds" =~ ^[1-9][0-9]*$ ]] ||
  { echo "run-luajit.sh: ROUNDS, N and LOST_SECONDS are positive integers (try --help)" >&2; exit 2; }
make_work /tmp/polystack-luajit-bench.XXXXXX
apply_halt_poll
bench="$root/bench/lua/cpu.lua"
require_tools gcc luajit perf python3
gcc -O2 -fomit-frame-pointer -pthread -o "$work/workload" "$root/bench/workload.c"
gcc -O2 -Wall -o "$work/ptrace_floor" "$root/bench/ptrace_floor.c"
build_polystack   # before anything is timed

if want pause; then
echo "## pause per sample at 99 Hz (us)"
"$root/polystack" record --mode ptrace --rate 99 --format folded -o "$work/lj.folded" \
  --stats-json "$work/lj.json" -- luajit "$bench" "$n" "$work/t" 2>"$work/lj.err"
"$root/polystack" record --mode ptrace --rate 99 --format folded -o "$work/c.folded" \
  --stats-json "$work/c.json" -- "$work/workload" -n 8000 -o "$work/t" 2>"$work/c.err"
"$work/ptrace_floor" -r 99 -j "$work/floor.json" -- luajit "$bench" "$n" "$work/t" 2>"$work/floor.err"
python3 - "$work" <<'PY'
import json, sys
w = sys.argv[1]
lj = json.load(open(w + "/lj.json"))["pause_ns"]
c = json.load(open(w + "/c.json"))["pause_ns"]
f = json.load(open(w + "/floor.json"))["pause_ns"]
fm, fp = f["median"], f["p99"]
print("| | median | p99 |\n|---|---|---|")
print(f"| polystack, LuaJIT + native walk | {lj['median']/1000:.0f} | {lj['p99']/1000:.0f} |")
print(f"| polystack, native-only walk (C workload) | {c['median']/1000:.0f} | {c['p99']/1000:.0f} |")
print(f"| C floor on the LuaJIT benchmark | {fm/1000:.0f} | {fp/1000:.0f} |")
print(f"| ratio LuaJIT walk / floor | {lj['median']/fm:.1f}x | {lj['p99']/fp:.1f}x |")
PY
fi

# One configuration per function; each round starts at a different one (rotating the order),
# so that a drift inside a round (the host's, or the page cache's) does not always fall on the
# same configuration: with a fixed order the unprofiled run always went first and perf record,
# which costs nothing measurable at 99 Hz, came out +4.7%.
# Each writes the benchmark's own figures to $work/<phase>.<configuration>.<round>; the program
# and its arguments are $prog and $prog_args, set by run_rounds (cpu.lua N, lost.lua SECONDS).
run_base() { luajit ${LUAJIT_OPTS:-} "$prog" $prog_args "$work/$phase.base.$1"; }
# polystack in one mode; its summary goes to $work/<phase>.<configuration>.<round>.log, shown
# if the record fails.
run_polystack() { # mode configuration round
  local logf="$work/$phase.$2.$3.log"
  "$root/polystack" record --mode "$1" --rate 99 --format folded -o "$work/$2.folded" \
    -- luajit ${LUAJIT_OPTS:-} "$prog" $prog_args "$work/$phase.$2.$3" 2>"$logf" ||
    die "polystack record --mode $1 failed ($phase, round $3): $(tail -3 "$logf")"
}
run_poly() { run_polystack ptrace poly "$1"; }
run_pperf() { run_polystack perf pperf "$1"; }
run_pbpf() { run_polystack bpf pbpf "$1"; }
run_floor() {
  "$work/ptrace_floor" -r 99 -- luajit ${LUAJIT_OPTS:-} "$prog" $prog_args \
    "$work/$phase.floor.$1" 2>/dev/null
}
run_jp() { luajit ${LUAJIT_OPTS:-} -jp=f,"$work/jp.txt" "$prog" $prog_args "$work/$phase.jp.$1"; }
run_perf() {
  perf record -q -F 99 -g -o "$work/perf.data" -- luajit ${LUAJIT_OPTS:-} "$prog" $prog_args \
    "$work/$phase.perf.$1" >/dev/null 2>&1
}
# ROUNDS rounds of every configuration once, each round starting at a different one.
run_rounds() { # phase program args
  phase=$1 prog=$2 prog_args=$3
  local r i n=${#order[@]}
  for r in $(seq 1 "$rounds"); do
    for ((i = 0; i < n; i++)); do
      "run_${order[$(( (r + i) % n ))]}" "$r"
    done
    log "$phase: round $r/$rounds done (load $(cut -d' ' -f1 /proc/loadavg))"
  done
}
order=(base poly pperf pbpf floor jp perf)
if want slowdown; then
echo; echo "## slowdown at 99 Hz, $rounds paired rounds (seconds of work, median)${LUAJIT_OPTS:+, luajit $LUAJIT_OPTS}"
run_rounds slowdown "$bench" "$n"
python3 - "$work" "$rounds" <<'PY'
import statistics, sys
w, rounds = sys.argv[1], int(sys.argv[2])
def run(name, r):
    return float(open(f"{w}/slowdown.{name}.{r}").read().split()[0])
def wait_ms(name, r):
    f = open(f"{w}/slowdown.{name}.{r}").read().split()
    return float(f[1]) / 1e6 if len(f) > 1 else float("nan")
names = (("poly", "polystack record --mode ptrace --rate 99"),
         ("pperf", "polystack record --mode perf --rate 99"),
         ("pbpf", "polystack record --mode bpf --rate 99"),
         ("floor", "C ptrace floor at 99 Hz (bench/ptrace_floor.c)"),
         ("jp", "luajit -jp (in-process)"),
         ("perf", "perf record -F 99 -g"))
# Each round runs every configuration back to back; a round's slowdown compares it with the
# same round's unprofiled run, which cancels most of the drift between rounds.
print("| round | no profiler (s) | " + " | ".join(label for _, label in names) + " |")
print("|---|---|" + "---|" * len(names))
for r in range(1, rounds + 1):
    b = run("base", r)
    print(f"| {r} | {b:.3f} | " + " | ".join(f"{100 * (run(n, r) / b - 1):+.1f}%" for n, _ in names) + " |")
base = statistics.median(run("base", r) for r in range(1, rounds + 1))
print()
print("| configuration | seconds (median) | slowdown, median of paired rounds |\n|---|---|---|")
print(f"| no profiler | {base:.3f} | - |")
for name, label in names:
    m = statistics.median(run(name, r) for r in range(1, rounds + 1))
    paired = statistics.median(run(name, r) / run("base", r) - 1 for r in range(1, rounds + 1))
    print(f"| {label} | {m:.3f} | {100 * paired:+.1f}% |")
# The target's run queue wait: time it could have run but another thread had its CPU. Unlike
# the elapsed time it does not move with the machine's speed, so it shows a profiler's threads
# crowding the target even where the slowdown is lost in noise.
print()
print("| configuration | run queue wait per run, median (ms) |\n|---|---|")
print(f"| no profiler | {statistics.median(wait_ms('base', r) for r in range(1, rounds + 1)):.1f} |")
for name, label in names:
    print(f"| {label} | {statistics.median(wait_ms(name, r) for r in range(1, rounds + 1)):.1f} |")
# The goal compares two slowdowns; each round gives one difference of the two, in points.
def points(a, b):
    return statistics.median(100 * (run(a, r) - run(b, r)) / run("base", r)
                             for r in range(1, rounds + 1))
print()
print("| difference, median over rounds | points |\n|---|---|")
print(f"| polystack --mode ptrace - luajit -jp | {points('poly', 'jp'):+.1f} |")
print(f"| polystack --mode perf - luajit -jp | {points('pperf', 'jp'):+.1f} |")
print(f"| polystack --mode bpf - luajit -jp | {points('pbpf', 'jp'):+.1f} |")
print(f"| C floor - luajit -jp | {points('floor', 'jp'):+.1f} |")
print(f"| polystack --mode ptrace - C floor | {points('poly', 'floor'):+.1f} |")
PY
fi

if want lost; then
echo; echo "## time taken from the target at 99 Hz (bench/lua/lost.lua), $rounds paired rounds of ${lost_seconds} s${LUAJIT_OPTS:+, luajit $LUAJIT_OPTS}"
# The elapsed time above wanders with the machine's speed by more than the goal (1 point); the
# benchmark's own count of the time it did not run does not (see bench/lua/lost.lua). Each
# round's unprofiled run gives that round's floor of interrupts and preemptions, which the
# profiled runs of the same round are compared with.
run_rounds lost "$root/bench/lua/lost.lua" "$lost_seconds"
python3 - "$work" "$rounds" <<'PY'
import statistics, sys
w, rounds = sys.argv[1], int(sys.argv[2])
def fields(name, r):
    return open(f"{w}/lost.{name}.{r}").read().split()
def lost(name, r):  # percent of the run's time
    f = fields(name, r)
    return 100 * float(f[1]) / (float(f[0]) * 1e9)
def gaps_per_s(name, r):
    f = fields(name, r)
    return float(f[2]) / float(f[0])
names = (("poly", "polystack record --mode ptrace --rate 99"),
         ("pperf", "polystack record --mode perf --rate 99"),
         ("pbpf", "polystack record --mode bpf --rate 99"),
         ("floor", "C ptrace floor at 99 Hz (bench/ptrace_floor.c)"),
         ("jp", "luajit -jp (in-process)"),
         ("perf", "perf record -F 99 -g"))
R = range(1, rounds + 1)
print("| round | no profiler (% lost) | " + " | ".join(label for _, label in names) + " |")
print("|---|---|" + "---|" * len(names))
for r in R:
    b = lost("base", r)
    print(f"| {r} | {b:.2f} | " + " | ".join(f"{lost(n, r) - b:+.2f}" for n, _ in names) + " |")
print()
print("| configuration | time lost, % (median) | taken by the profiler, points (median of paired rounds) | gaps per second |\n|---|---|---|---|")
print(f"| no profiler | {statistics.median(lost('base', r) for r in R):.2f} | - | {statistics.median(gaps_per_s('base', r) for r in R):.0f} |")
for name, label in names:
    print(f"| {label} | {statistics.median(lost(name, r) for r in R):.2f} | "
          f"{statistics.median(lost(name, r) - lost('base', r) for r in R):+.2f} | "
          f"{statistics.median(gaps_per_s(name, r) for r in R):.0f} |")
def points(a, b):
    d = sorted(lost(a, r) - lost(b, r) for r in R)
    return statistics.median(d), d[len(d) // 4], d[(3 * len(d)) // 4]
print()
print("| difference, over rounds | median (points) | quartiles |\n|---|---|---|")
for a, b, label in (("poly", "jp", "polystack --mode ptrace - luajit -jp"),
                    ("pperf", "jp", "polystack --mode perf - luajit -jp"),
                    ("pbpf", "jp", "polystack --mode bpf - luajit -jp"),
                    ("pbpf", "poly", "polystack --mode bpf - polystack --mode ptrace"),
                    ("floor", "jp", "C floor - luajit -jp"),
                    ("poly", "floor", "polystack --mode ptrace - C floor")):
    m, lo, hi = points(a, b)
    print(f"| {label} | {m:+.2f} | {lo:+.2f} .. {hi:+.2f} |")
PY
fi
