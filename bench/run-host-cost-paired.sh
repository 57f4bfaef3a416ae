#!/usr/bin/env bash
# Marginal host cost per sample of two builds recording the same running target at the same
# time (docs/benchmarks-host-cost.md, "Paired figures"): on a shared machine the separate
# records of run-host-cost.sh see different load and get different sample counts, and their
# marginal figure moves by +-100 ms per 1000; two sessions attached to one target side by side
# see the same load and nearly the same samples.
#
# Each round: both builds record the target (--pid) for LONG seconds at once, then both for
# SHORT seconds at once; marginal = (long - short) CPU over (long - short) samples, per build;
# the median over rounds is reported. bpf and perf sessions coexist on one target; ptrace mode
# cannot (one tracer per thread): measure it with run-host-cost.sh.
#
# Usage: bench/run-host-cost-paired.sh --baseline DIR [--modes "bpf perf"]
#            [--workloads "luajit native2"] [--seconds 20] [--short 4] [--rounds 3] [--rate 999]
#            [--out FILE] [--keep]
set -euo pipefail

root="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)"
bench_name=run-host-cost-paired
. "$root/bench/lib.sh"

long=20
short=4
rounds=3
rate=999
modes="bpf perf"
workloads="luajit native2"
baseline=""
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) usage "$0"; exit 0 ;;
    --seconds) long="$2"; shift 2 ;;
    --short) short="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --rate) rate="$2"; shift 2 ;;
    --modes) modes="$2"; shift 2 ;;
    --workloads) workloads="$2"; shift 2 ;;
    --baseline) baseline="$(cd "$2" && pwd)"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --keep) keep=1; shift ;;
    *) echo "$bench_name: unknown argument $1 (try --help)" >&2; exit 2 ;;
  esac
done
[[ "$long" =~ ^[1-9][0-9]*$ && "$short" =~ ^[1-9][0-9]*$ && "$rounds" =~ ^[1-9][0-9]*$ &&
   "$rate" =~ ^[1-9][0-9]*$ ]] ||
  { echo "$bench_name: --seconds, --short, --rounds and --rate take positive integers" >&2; exit 2; }
[ "$short" -lt "$long" ] || { echo "$bench_name: --short must be less than --seconds" >&2; exit 2; }
[ -n "$baseline" ] || { echo "$bench_name: --baseline DIR is required" >&2; exit 2; }
[ -x "$baseline/polystack" ] || { echo "$bench_name: $baseline has no polystack launcher" >&2; exit 2; }
for m in $modes; do
  case "$m" in bpf|perf) ;; *) echo "$bench_name: mode $m cannot run paired (bpf, perf)" >&2; exit 2 ;; esac
done
for w in $workloads; do
  case "$w" in luajit|native2) ;; *) echo "$bench_name: unknown workload $w" >&2; exit 2 ;; esac
done
: "${out:=$root/bench/results/host-cost-paired.md}"

require_tools gcc java python3
[[ " $workloads " != *" luajit "* ]] || require_tools luajit
make_work /tmp/polystack-host-cost-paired.XXXXXX
target=""
trap '[ -z "$target" ] || kill "$target" 2>/dev/null; cleanup_work' EXIT # no workload outlives the script
gcc -O2 -fomit-frame-pointer -pthread -o "$work/workload" "$root/bench/workload.c"
build_polystack
log "building the baseline in $baseline (first use or sources changed)"
"$baseline/polystack" --help >/dev/null
declare -A launcher=([current]="$root/polystack" [baseline]="$baseline/polystack")

commit_current="$(git -C "$root" log -1 --format='%h %s' | cut -c1-90)"
commit_baseline="$(git -C "$baseline" log -1 --format='%h %s' | cut -c1-90)"
load_start="$(cut -d' ' -f1-3 /proc/loadavg)"
started=$(date +%s)
for w in $workloads; do
  for m in $modes; do
    case "$w" in
      luajit) luajit "$root/bench/lua/cpu.lua" 100000000 /dev/null >/dev/null 2>&1 & ;;
      native2) "$work/workload" -t 2 -s 3600 >/dev/null 2>&1 & ;;
    esac
    target=$!
    sleep 1 # past the loader and LuaJIT's start
    for ((r = 1; r <= rounds; r++)); do
      for s in "$long" "$short"; do
        pids=()
        for b in current baseline; do
          "${launcher[$b]}" record --mode "$m" --rate "$rate" --pid "$target" --duration "${s}s" \
            --format folded -o "$work/$b.folded" --stats-json "$work/$m-$w-$b-$s-$r.json" \
            >"$work/$m-$w-$b-$s-$r.log" 2>&1 &
          pids+=($!)
        done
        for p in "${pids[@]}"; do
          wait "$p" || { die "a $m record of $w failed: $(tail -2 "$work/$m-$w-"*"-$s-$r.log")"; }
        done
      done
      log "$w $m round $r/$rounds done"
    done
    kill "$target"
    wait "$target" 2>/dev/null || true
    target=""
  done
done
load_end="$(cut -d' ' -f1-3 /proc/loadavg)"

mkdir -p "$(dirname "$out")"
{
  echo "## Host cost per sample, paired ($(date -u +%Y-%m-%dT%H:%MZ))"
  echo
  echo "Machine: $(machine_info). Load average at start: $load_start; at end: $load_end. Took $(($(date +%s) - started)) s."
  echo "Build current: $commit_current."
  echo "Build baseline: $commit_baseline."
  echo "Both builds record one running target (--pid) at once, ${long} s then ${short} s, at $rate Hz; $rounds rounds."
  echo
  python3 - "$work" "$long" "$short" "$rounds" "$modes" "$workloads" <<'PY'
import json, statistics, sys
work, long, short, rounds = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
modes, workloads = sys.argv[5].split(), sys.argv[6].split()
names = {"luajit": "LuaJIT (bench/lua/cpu.lua)", "native2": "native, 2 threads"}
print("| workload | mode | build | samples (long, median) | marginal CPU per 1000 samples (median) | per round | fixed (short record's CPU, median) | peak RSS (max) |")
print("|---|---|---|---|---|---|---|---|")
for w in workloads:
    for m in modes:
        for b in ("current", "baseline"):
            marg, samples, fixed, rss = [], [], [], []
            for r in range(1, rounds + 1):
                L = json.load(open(f"{work}/{m}-{w}-{b}-{long}-{r}.json"))
                S = json.load(open(f"{work}/{m}-{w}-{b}-{short}-{r}.json"))
                n = L["samples"] - S["samples"]
                marg.append((L["host"]["cpu_ns"] - S["host"]["cpu_ns"]) / 1e6 / n * 1000 if n > 0 else float("nan"))
                samples.append(L["samples"])
                fixed.append(S["host"]["cpu_ns"] / 1e9)
                rss.append(max(L["host"]["peak_rss_kib"], S["host"]["peak_rss_kib"]) // 1024)
            print(f"| {names[w]} | {m} | {b} | {statistics.median(samples):.0f} | **{statistics.median(marg):.1f} ms** | "
                  f"{', '.join(f'{x:.1f}' for x in marg)} | {statistics.median(fixed):.2f} s | {max(rss)} MiB |")
PY
} >"$out"
cat "$out"
log "table written to $out"
