#!/usr/bin/env bash
# Host cost per sample, measured side by side in one run (docs/benchmarks-host-cost.md):
# polystack's own CPU time (user + sys of its JVM, from --stats-json: the launched target's CPU
# is not in it) per 1000 samples and its peak RSS, in each mode (bpf, perf, ptrace) on each
# workload (a LuaJIT program, bench/lua/cpu.lua; the native bench/workload.c with 2 and with 16
# busy threads), next to `perf record -e cpu-clock -F 99 --call-graph dwarf -p PID` plus the
# `perf script` that unwinds its stack copies (polystack unwinds while it records).
#
# Each polystack configuration is recorded for LONG and for SHORT seconds at 99 Hz. "per 1000"
# is the long record's CPU over its samples: what a user pays, start-up included. "marginal" is
# (long - short) CPU over (long - short) samples: the cost of one more sample, without the fixed
# part (JVM start, attach, loading modules, writing the profile).
#
# Usage: bench/run-host-cost.sh [--seconds LONG] [--short SHORT] [--rounds N]
#                               [--modes "bpf perf ptrace"] [--workloads "luajit native2 native16"]
#                               [--rate HZ] [--baseline DIR] [--jfr DIR] [--no-perf] [--out FILE]
#                               [--keep]
#   --seconds LONG   length of the long records (default 25)
#   --short SHORT    length of the short records (default 3)
#   --rounds N       repeat everything N times, interleaved; medians are reported (default 1)
#   --modes LIST     polystack modes to measure (default: bpf perf ptrace)
#   --workloads LIST workloads to measure (default: luajit native2 native16)
#   --rate HZ        sampling rate of every record, perf's included (default 99); a high rate
#                    (999) makes the per-sample part stand out from the per-second part
#   --baseline DIR   also measure the polystack of another checkout DIR (e.g. a git worktree of
#                    an older commit, built there) right after this one's every run, so before
#                    and after share the machine's state; its rows are marked "baseline"
#   --jfr DIR        record every polystack run with Java Flight Recorder into DIR (profile
#                    settings; this adds its own cost, so the figures of such a run are not the
#                    ones to quote)
#   --no-perf        skip the perf rows
#   --out FILE       where to write the markdown table (default: bench/results/host-cost.md)
#   --keep           keep the scratch directory (stats JSON, logs, folded profiles)
#
# CPU time is far less sensitive to other load than wall time, but a shared machine still moves
# it (cache, frequency, the JIT's timing): compare builds within one run, not across runs.
set -euo pipefail

root="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)"
bench_name=run-host-cost
. "$root/bench/lib.sh"

long=25
short=3
rate=99
rounds=1
modes="bpf perf ptrace"
workloads="luajit native2 native16"
baseline=""
jfr=""
with_perf=1
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) usage "$0"; exit 0 ;;
    --seconds) long="$2"; shift 2 ;;
    --short) short="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --modes) modes="$2"; shift 2 ;;
    --workloads) workloads="$2"; shift 2 ;;
    --rate) rate="$2"; shift 2 ;;
    --baseline) baseline="$(cd "$2" && pwd)"; shift 2 ;;
    --jfr) jfr="$(mkdir -p "$2" && cd "$2" && pwd)"; shift 2 ;;
    --no-perf) with_perf=0; shift ;;
    --out) out="$2"; shift 2 ;;
    --keep) keep=1; shift ;;
    *) echo "run-host-cost.sh: unknown argument $1 (try --help)" >&2; exit 2 ;;
  esac
done
[[ "$long" =~ ^[1-9][0-9]*$ && "$short" =~ ^[1-9][0-9]*$ && "$rounds" =~ ^[1-9][0-9]*$ &&
   "$rate" =~ ^[1-9][0-9]*$ ]] ||
  { echo "run-host-cost.sh: --seconds, --short, --rounds and --rate take positive integers" >&2; exit 2; }
[ "$short" -lt "$long" ] || { echo "run-host-cost.sh: --short must be less than --seconds" >&2; exit 2; }
for m in $modes; do
  case "$m" in bpf|perf|ptrace) ;; *) echo "run-host-cost.sh: unknown mode $m" >&2; exit 2 ;; esac
done
for w in $workloads; do
  case "$w" in luajit|native2|native16) ;; *) echo "run-host-cost.sh: unknown workload $w" >&2; exit 2 ;; esac
done
: "${out:=$root/bench/results/host-cost.md}"

require_tools gcc java /usr/bin/time python3
[[ " $workloads " != *" luajit "* ]] || require_tools luajit
if [ "$with_perf" = 1 ] && ! command -v perf >/dev/null 2>&1; then
  log "perf not found: no perf rows"
  with_perf=0
fi
make_work /tmp/polystack-host-cost.XXXXXX
mkdir -p "$work/json" "$work/logs"

log "building bench/workload.c"
gcc -O2 -fomit-frame-pointer -pthread -o "$work/workload" "$root/bench/workload.c"
build_polystack
builds=(current)
declare -A launcher=([current]="$root/polystack")
commit_of() { git -C "$1" log -1 --format='%h %s' 2>/dev/null | cut -c1-90 || echo unknown; }
declare -A commit=([current]="$(commit_of "$root")")
if [ -n "$baseline" ]; then
  [ -x "$baseline/polystack" ] || die "--baseline $baseline has no polystack launcher"
  log "building the baseline in $baseline (first use or sources changed)"
  "$baseline/polystack" --help >/dev/null
  builds+=(baseline)
  launcher[baseline]="$baseline/polystack"
  commit[baseline]="$(commit_of "$baseline")"
fi

# The workload's command line, running for at least SECONDS: workload_cmd NAME SECONDS
workload_cmd() {
  case "$1" in
    luajit) echo "luajit $root/bench/lua/cpu.lua 100000000 /dev/null" ;;
    native2) echo "$work/workload -t 2 -s $(($2 + 60))" ;;
    native16) echo "$work/workload -t 16 -s $(($2 + 60))" ;;
  esac
}

# One polystack record of a launched workload, killed at the end of --duration:
# ps_record BUILD MODE WORKLOAD SECONDS ROUND; its stats go to $work/json/NAME.json.
ps_record() {
  local b="$1" m="$2" w="$3" s="$4" r="$5"
  local name="$b-$m-$w-$s-$r" opts=""
  [ -z "$jfr" ] || opts="-XX:StartFlightRecording=filename=$jfr/$name.jfr,settings=profile"
  # shellcheck disable=SC2046 # the workload's words are meant to split
  POLYSTACK_JAVA_OPTS="$opts" "${launcher[$b]}" record --mode "$m" --rate "$rate" --duration "${s}s" \
    --format folded -o "$work/$name.folded" --stats-json "$work/json/$name.json" \
    -- $(workload_cmd "$w" "$s") >"$work/logs/$name.log" 2>&1 \
    || die "$name failed: $(tail -3 "$work/logs/$name.log")"
}

# perf record attached to the running workload (so /usr/bin/time counts perf alone), then the
# perf script that unwinds its samples: perf_record WORKLOAD SECONDS ROUND
perf_record() {
  local w="$1" s="$2" r="$3" name="perf-$1-$3" pid
  # shellcheck disable=SC2046
  $(workload_cmd "$w" "$s") >"$work/logs/$name-workload.log" 2>&1 &
  pid=$!
  sleep 1 # past the loader and LuaJIT's start
  /usr/bin/time -f "%e %U %S %M" -o "$work/$name.record.time" perf record -q -e cpu-clock \
    -F "$rate" --call-graph dwarf -p "$pid" -o "$work/$name.data" -- sleep "$s" \
    >"$work/logs/$name.log" 2>&1 || die "perf record on $w failed: $(tail -3 "$work/logs/$name.log")"
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  /usr/bin/time -f "%e %U %S %M" -o "$work/$name.script.time" perf script -i "$work/$name.data" \
    >/dev/null 2>"$work/logs/$name.script.log" || die "perf script failed: $(tail -3 "$work/logs/$name.script.log")"
  perf script -i "$work/$name.data" -F tid 2>/dev/null | wc -l >"$work/$name.samples"
  rm -f "$work/$name.data"
}

load_start="$(cut -d' ' -f1-3 /proc/loadavg)"
started=$(date +%s)
busy_before=()
for ((r = 1; r <= rounds; r++)); do
  busy="$(cpu_busy)"
  busy_before+=("$busy")
  log "round $r/$rounds (other CPU use before: $busy%)"
  for w in $workloads; do
    for m in $modes; do
      for b in "${builds[@]}"; do
        for s in "$long" "$short"; do
          ps_record "$b" "$m" "$w" "$s" "$r"
        done
        log "  $w $m $b: $(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["samples"], "samples,", round(d["host"]["cpu_ns"] / 1e6), "ms CPU")' "$work/json/$b-$m-$w-$long-$r.json")"
      done
    done
    if [ "$with_perf" = 1 ]; then
      perf_record "$w" "$long" "$r"
      log "  $w perf: $(cat "$work/perf-$w-$r.samples") samples"
    fi
  done
done
load_end="$(cut -d' ' -f1-3 /proc/loadavg)"
took=$(($(date +%s) - started))

{
  echo "## Host cost per sample ($(date -u +%Y-%m-%dT%H:%MZ))"
  echo
  echo "Machine: $(machine_info). Load average at start: $load_start; at end: $load_end."
  echo "Other CPU use in the second before each round: ${busy_before[*]/%/%}. Took ${took}s; $rounds round(s), medians over rounds."
  for b in "${builds[@]}"; do
    echo "Build $b: ${commit[$b]}."
  done
  echo "Records at $rate Hz of a launched workload, long ${long} s and short ${short} s, output --format folded;"
  echo "polystack's CPU is its JVM's (user + sys, JIT compiler and GC included), from --stats-json;"
  echo "fixed = the short record's CPU (JVM start, attach, write-out and ${short} s of sampling)."
  echo
  python3 - "$work" "$long" "$short" "$rounds" "$modes" "$workloads" "${builds[*]}" "$with_perf" <<'PY'
import json, os, statistics, sys
work, long_s, short_s, rounds = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
modes, workloads, builds = sys.argv[5].split(), sys.argv[6].split(), sys.argv[7].split()
with_perf = sys.argv[8] == "1"
names = {"luajit": "LuaJIT (bench/lua/cpu.lua)", "native2": "native, 2 threads",
         "native16": "native, 16 threads"}
def stats(b, m, w, s, r):
    with open(f"{work}/json/{b}-{m}-{w}-{s}-{r}.json") as f:
        return json.load(f)
def med(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None
def ms(v):
    return "n/a" if v is None else f"{v:.1f} ms"
print("| workload | configuration | samples (long) | CPU (long) | CPU per 1000 samples | marginal CPU per 1000 | fixed | peak RSS |")
print("|---|---|---|---|---|---|---|---|")
for w in workloads:
    for m in modes:
        for b in builds:
            per, marg, rss, cpu, n, fixed = [], [], [], [], [], []
            for r in range(1, rounds + 1):
                L, S = stats(b, m, w, long_s, r), stats(b, m, w, short_s, r)
                nl, ns = L["samples"], S["samples"]
                cl, cs = L["host"]["cpu_ns"] / 1e6, S["host"]["cpu_ns"] / 1e6
                n.append(nl); cpu.append(cl); rss.append(L["host"]["peak_rss_kib"] / 1024)
                fixed.append(cs)
                per.append(cl * 1000 / nl if nl else None)
                marg.append((cl - cs) * 1000 / (nl - ns) if nl > ns else None)
            label = f"polystack --mode {m}" + (f" ({b})" if len(builds) > 1 else "")
            print(f"| {names[w]} | {label} | {med(n):.0f} | {med(cpu) / 1000:.2f} s | "
                  f"**{ms(med(per))}** | {ms(med(marg))} | {med(fixed) / 1000:.2f} s | {med(rss):.0f} MiB |")
    if with_perf:
        rec, scr, n, rss = [], [], [], []
        for r in range(1, rounds + 1):
            base = f"{work}/perf-{w}-{r}"
            with open(base + ".samples") as f:
                samples = int(f.read().strip() or 0)
            def cpu_of(path):
                with open(path) as f:
                    wall, user, sys_, kib = f.read().split()[-4:]
                return (float(user) + float(sys_)) * 1000, int(kib) / 1024
            c1, k1 = cpu_of(base + ".record.time")
            c2, k2 = cpu_of(base + ".script.time")
            n.append(samples); rec.append(c1); scr.append(c2); rss.append(max(k1, k2))
        nn = med(n)
        print(f"| {names[w]} | perf record + perf script (record / script) | {nn:.0f} | "
              f"{(med(rec) + med(scr)) / 1000:.2f} s | **{ms((med(rec) + med(scr)) * 1000 / nn if nn else None)}** "
              f"({ms(med(rec) * 1000 / nn if nn else None)} / {ms(med(scr) * 1000 / nn if nn else None)}) | | | {med(rss):.0f} MiB |")
PY
} >"$work/table.md"

mkdir -p "$(dirname "$out")"
cp "$work/table.md" "$out"
cat "$work/table.md"
log "table written to $out"
