#!/usr/bin/env bash
# What bpf mode (`record --mode bpf`: each tick captured in the kernel by eBPF, the target never
# stops) gives and costs, measured in one run, side by side with ptrace and perf modes:
#
#   1. accuracy at phase changes: bench/lua/phases.lua (luajit -joff; phases of 15-40 us that
#      time themselves through the vDSO) recorded with --format folded at 999 Hz in bpf, ptrace
#      and perf modes, in paired, interleaved rounds; per run, bench/phase_shares.py's total
#      variation distance (TVD) between the profile's phase shares and the program's own, and
#      the share of its `clock` phase (os.clock: a real system call, 1-2% of the time), which a
#      sampler that stops threads over-counts (a stop lands at the syscall's exit);
#   2. scale: bench/workload.c with 16, then 64 busy threads (started after the record starts)
#      at 99 Hz in bpf mode: samples against the ticks the kernel delivered (--stats-json
#      capture.ticks) and the records it wrote; the same workload in ptrace mode with its
#      late_tick and stop_timeout losses; both per second of the target's CPU time (99 is
#      every tick);
#   3. the capture program's in-kernel cost per tick (kernel.bpf_stats_enabled=1 for this
#      section, restored at exit: run_time_ns / run_cnt of tick_capture, and its run time per
#      tick of the target) on a LuaJIT workload (phases.lua) and a native one (bench/workload.c),
#      next to the pause per sample of the C ptrace floor (bench/ptrace_floor.c) on each.
#
# Usage: bench/run-bpf.sh [--quick | --full] [--rounds N] [--out FILE] [--keep] [--no-wait]
#                         [--nice N] [--halt-poll NS]
#   --quick     3 accuracy rounds of 4 s, one 3 s run per scale and cost configuration
#               (about 3 minutes on a quiet machine)
#   --full      7 accuracy rounds of 8 s, three 5 s runs per scale and cost configuration
#               (about 12 minutes on a quiet machine; default)
#   --rounds N  override the number of accuracy rounds
#   --out FILE  where to write the markdown tables (default: bench/results/bpf-MODE.md)
#   --keep      keep the scratch directory (profiles, --stats-json files, logs)
#   --no-wait   do not wait for a quiet machine before each round (by default it waits, up to
#               30 s in all in quick mode and 120 s in full mode, for other processes to use
#               < 25% of the CPUs; the tables report what they used)
#   --nice N    run everything at niceness N (needs root)
#   --halt-poll NS  set the guest's cpuidle halt polling to NS for the run, restored at the end
#               (root; see run-sampling.sh --help)
# LUAJIT_OPTS (default -joff) is passed to luajit in the accuracy and cost runs.
#
# Needs root (bpf mode, ptrace, bpf_stats), luajit, gcc, python3 and bpftool.
set -euo pipefail

root="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)"
bench_name=run-bpf
. "$root/bench/lib.sh"
args=("$@")
while [ $# -gt 0 ]; do
  common_option "$@"
  [ "$consumed" -gt 0 ] || { echo "run-bpf.sh: unknown argument $1 (try --help)" >&2; exit 2; }
  shift "$consumed"
done
if [ -n "$nice_level" ] && [ "${RUN_BPF_NICED:-}" != 1 ]; then
  RUN_BPF_NICED=1 exec nice -n "$nice_level" "$0" "${args[@]}"
fi
[[ -z "$rounds" || "$rounds" =~ ^[1-9][0-9]*$ ]] || { echo "run-bpf.sh: --rounds takes a positive integer" >&2; exit 2; }

if [ "$mode" = quick ]; then
  : "${rounds:=3}"
  phase_seconds=4
  runs=1            # per scale and per cost configuration
  run_seconds=3
  wait_budget=30
else
  : "${rounds:=7}"
  phase_seconds=8
  runs=3
  run_seconds=5
  wait_budget=120
fi
acc_rate=999
luajit_opts="${LUAJIT_OPTS--joff}"
: "${out:=$root/bench/results/bpf-$mode.md}"

require_tools gcc luajit python3 bpftool
[ "$(id -u)" = 0 ] || die "needs root (bpf mode, ptrace and kernel.bpf_stats_enabled)"
make_work /tmp/polystack-bpf-bench.XXXXXX
apply_halt_poll
mkdir -p "$work/acc" "$work/scale" "$work/cost" "$work/logs"

log "building bench/workload.c and bench/ptrace_floor.c"
gcc -O2 -fomit-frame-pointer -pthread -o "$work/workload" "$root/bench/workload.c"
gcc -O2 -Wall -o "$work/ptrace_floor" "$root/bench/ptrace_floor.c"
build_polystack
wl="$work/workload"
phases="$root/bench/lua/phases.lua"

# bpf mode must load here: without it every figure below would be perf mode's (the default
# falls back to perf; --mode bpf fails instead, which is what this probe checks).
"${ps[@]}" record --mode bpf --rate 99 --format folded -o "$work/probe.folded" \
  -- "$wl" -n 300 -o /dev/null >"$work/logs/probe.log" 2>&1 ||
  die "polystack record --mode bpf does not run here: $(tail -3 "$work/logs/probe.log")"

# Native work of about S seconds for one thread (bench/workload.c -n ITERATIONS), calibrated
# once: the C floor samples the main thread only, so the native cost runs use -n, not -t 1.
"$wl" -n 1000 -o "$work/calib" >/dev/null
per_s="$(awk '/^elapsed_ns/ {printf "%d", 1000 / ($2 / 1e9)}' "$work/calib")"
native_iterations=$((per_s * run_seconds))

load_start="$(cut -d' ' -f1-3 /proc/loadavg)"
started=$(date +%s)

# One polystack record; its summary goes to a log, shown if the record fails.
ps_record() { # log-file polystack-record-arguments...
  local logf="$1"
  shift
  "${ps[@]}" record "$@" >"$logf" 2>&1 || die "polystack record $* failed: $(tail -3 "$logf")"
}
# A number from a JSON file: jget FILE KEY [KEY...] (nested keys; "nan" when absent).
jget() {
  python3 - "$@" <<'PY'
import json, sys
v = json.load(open(sys.argv[1]))
for k in sys.argv[2:]:
    v = v.get(k) if isinstance(v, dict) else None
print("nan" if v is None else v)
PY
}

# ---------------------------------------------------------------------------------------------
# 1. Accuracy at phase changes, 999 Hz, interleaved rounds.
acc_record() { # config round
  local m=${1#acc_} r=$2 base
  base="$work/acc/$m-$r"
  ps_record "$base.log" --mode "$m" --rate "$acc_rate" --format folded -o "$base.folded" \
    --stats-json "$base.json" -- luajit $luajit_opts "$phases" "$phase_seconds" "$base.phases"
  python3 "$root/bench/phase_shares.py" "$base.phases" "$base.folded" >"$base.shares"
  shown="$(awk '$1 == "tvd" {printf "tvd %.3f", $3}' "$base.shares")"
}
configs=(acc_bpf acc_ptrace acc_perf)
log "accuracy: $rounds rounds of phases.lua for ${phase_seconds}s at $acc_rate Hz in bpf, ptrace and perf modes"
paired_rounds acc_record
acc_busy=("${busy_rounds[@]}")

# ---------------------------------------------------------------------------------------------
# 2. Scale: 16 and 64 busy threads at 99 Hz. The target's CPU time is read from /proc while it
# runs (the last reading before it exits), so that samples compare with the ticks it could get.
# Prints the CPU seconds of the newest process whose command line starts with PREFIX, last
# seen before the process PID (the record) exited.
watch_cpu() { # pid prefix
  python3 - "$@" <<'PY'
import os, sys, time
watch, prefix = int(sys.argv[1]), sys.argv[2].encode()
tck = os.sysconf("SC_CLK_TCK")
target, last = None, 0.0
def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False
while alive(watch):
    if target is None:
        for p in os.listdir("/proc"):
            if p.isdigit():
                try:
                    with open(f"/proc/{p}/cmdline", "rb") as f:
                        if f.read().replace(b"\0", b" ").startswith(prefix):
                            target = int(p)
                except OSError:
                    pass
    if target is not None:
        try:
            with open(f"/proc/{target}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            # utime + stime; the maximum, as a reaped zombie may read as 0
            last = max(last, (int(fields[11]) + int(fields[12])) / tck)
        except (OSError, IndexError, ValueError):
            pass
    time.sleep(0.05)
print(f"{last:.2f}")
PY
}
scale_record() { # config round
  local c=$1 r=$2 m n base pid
  m=${c#scale_}; n=${m##*[a-z]}; m=${m%"$n"}
  base="$work/scale/$m$n-$r"
  local t0=$EPOCHREALTIME
  "${ps[@]}" record --mode "$m" --rate 99 --format folded -o "$base.folded" \
    --stats-json "$base.json" -- "$wl" -t "$n" -s "$run_seconds" >"$base.log" 2>&1 &
  pid=$!
  watch_cpu "$pid" "$wl -t $n " >"$base.cpu"
  wait "$pid" || die "polystack record --mode $m ($n threads) failed: $(tail -3 "$base.log")"
  awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN {printf "%.2f\n", b - a}' >"$base.wall"
  shown="$(python3 - "$base.json" "$base.cpu" <<'PY'
import json, sys
s = json.load(open(sys.argv[1])); cpu = float(open(sys.argv[2]).read())
print(f"{s['samples']}/{cpu:.1f}s")
PY
)"
}
configs=(scale_bpf16 scale_ptrace16 scale_bpf64 scale_ptrace64)
saved_rounds=$rounds
rounds=$runs
log "scale: ${run_seconds}s of 16 and 64 busy threads at 99 Hz, bpf and ptrace modes, $runs run(s) each"
paired_rounds scale_record
scale_busy=("${busy_rounds[@]}")

# ---------------------------------------------------------------------------------------------
# 3. In-kernel cost per tick. The record's capture program is found by its file descriptor in
# the JVM (/proc/PID/fdinfo: prog_id) and pinned while it runs, so that its run statistics can be
# read once the record has ended (with every tick in them); the pin is removed right after.
enable_bpf_stats
pin_dir=/sys/fs/bpf
[ -d "$pin_dir" ] || die "no BPF file system at $pin_dir (mount -t bpf bpf $pin_dir)"
# Pins the tick_capture program that process PID holds at PIN; prints its id ("" if none seen).
pin_capture() { # pid pin
  python3 - "$@" <<'PY'
import os, subprocess, sys, time, json
pid, pin = int(sys.argv[1]), sys.argv[2]
def prog_ids():
    ids = set()
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return None
    for fd in fds:
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") != "anon_inode:bpf-prog":
                continue
            for line in open(f"/proc/{pid}/fdinfo/{fd}"):
                if line.startswith("prog_id:"):
                    ids.add(int(line.split()[1]))
        except OSError:
            pass
    return ids
while True:
    ids = prog_ids()
    if ids is None:
        break  # the record ended before its program was seen
    for i in sorted(ids):
        info = subprocess.run(["bpftool", "prog", "show", "id", str(i), "--json"],
                              capture_output=True, text=True)
        if info.returncode == 0 and json.loads(info.stdout).get("name") == "tick_capture":
            if subprocess.run(["bpftool", "prog", "pin", "id", str(i), pin]).returncode == 0:
                print(i)
                sys.exit(0)
    time.sleep(0.05)
PY
}
cost_record() { # config round
  local c=$1 r=$2 base="$work/cost/$1-$2" pid pin id
  pin="$pin_dir/polystack-bench-$$-$c-$r"
  case "$c" in
    bpf_lua|bpf_native)
      if [ "$c" = bpf_lua ]; then
        set -- luajit $luajit_opts "$phases" "$run_seconds" "$base.phases"
      else
        set -- "$wl" -n "$native_iterations" -o "$base.elapsed"
      fi
      "${ps[@]}" record --mode bpf --rate 99 --format folded -o "$base.folded" \
        --stats-json "$base.json" -- "$@" >"$base.log" 2>&1 &
      pid=$!
      pins+=("$pin")
      id="$(pin_capture "$pid" "$pin")"
      wait "$pid" || die "polystack record --mode bpf ($c) failed: $(tail -3 "$base.log")"
      [ -n "$id" ] || die "$c: the record's tick_capture program was not found while it ran"
      bpftool prog show pinned "$pin" --json >"$base.prog"
      rm -f "$pin"
      shown="$(python3 - "$base.prog" "$base.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1])); s = json.load(open(sys.argv[2]))
ticks = s["capture"].get("ticks", 0)
print(f"{p.get('run_time_ns', 0) / max(ticks, 1):.0f}ns/tick")
PY
)" ;;
    floor_lua)
      "$work/ptrace_floor" -r 99 -j "$base.json" -- luajit $luajit_opts "$phases" "$run_seconds" \
        "$base.phases" >"$base.log" 2>&1 || die "ptrace_floor failed: $(tail -3 "$base.log")"
      shown="$(us "$(jget "$base.json" pause_ns median)")us" ;;
    floor_native)
      "$work/ptrace_floor" -r 99 -j "$base.json" -- "$wl" -n "$native_iterations" \
        -o "$base.elapsed" >"$base.log" 2>&1 || die "ptrace_floor failed: $(tail -3 "$base.log")"
      shown="$(us "$(jget "$base.json" pause_ns median)")us" ;;
  esac
}
pins=()
remove_pins() { local p; for p in "${pins[@]}"; do rm -f "$p"; done; }
trap 'remove_pins; cleanup_work' EXIT
configs=(bpf_lua floor_lua bpf_native floor_native)
log "in-kernel cost: ${run_seconds}s runs of phases.lua and bench/workload.c, bpf mode and the C floor, $runs run(s) each"
paired_rounds cost_record
cost_busy=("${busy_rounds[@]}")
restore_bpf_stats
rounds=$saved_rounds

load_end="$(cut -d' ' -f1-3 /proc/loadavg)"
took=$(($(date +%s) - started))

# ---------------------------------------------------------------------------------------------
# Tables
{
  echo "## bpf mode ($mode run, $(date -u +%Y-%m-%dT%H:%MZ))"
  echo
  echo "Machine: $(machine_info), $(halt_poll_info). Niceness of all measured processes: $(nice)."
  echo "Load average at start: $load_start; at end: $load_end. Took ${took}s (${waited}s of it waiting for a quiet machine)."
  echo "CPU use by other processes in the second before each round: accuracy ${acc_busy[*]/%/%}; scale ${scale_busy[*]/%/%}; cost ${cost_busy[*]/%/%}."
  echo
  python3 - "$work" "$rounds" "$runs" "$phase_seconds" "$run_seconds" "$acc_rate" "$luajit_opts" <<'PY'
import glob, json, statistics, sys
w, rounds, runs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
phase_s, run_s, acc_rate, lj = sys.argv[4], sys.argv[5], sys.argv[6], sys.argv[7]
med = statistics.median
def q(xs):
    xs = sorted(xs)
    return xs[len(xs) // 4], xs[(3 * len(xs)) // 4]
def shares(path):
    prog, prof, tvd, n = {}, {}, None, 0
    for line in open(path):
        f = line.split()
        if f[0] == "phase":
            continue
        if f[0] == "tvd":
            tvd, n = float(f[2]), int(f[4])
        else:
            prog[f[0]], prof[f[0]] = float(f[1]), float(f[2])
    return prog, prof, tvd, n
def load(path):
    return json.load(open(path))

modes = ("bpf", "ptrace", "perf")
print(f"### Accuracy at phase changes (bench/lua/phases.lua, luajit {lj}, {phase_s} s, {acc_rate} Hz, {rounds} interleaved rounds)")
print()
print("TVD: total variation distance between the profile's phase shares and the program's own timing")
print("(bench/phase_shares.py); `clock` is a real system call (os.clock).")
print()
print("| mode | TVD, median | TVD quartiles | TVD per round | `clock` share, median (program's) | samples per run | errors per run | losses per run |")
print("|---|---|---|---|---|---|---|---|")
acc = {}
for m in modes:
    rows = []
    for r in range(1, rounds + 1):
        prog, prof, tvd, n = shares(f"{w}/acc/{m}-{r}.shares")
        s = load(f"{w}/acc/{m}-{r}.json")
        rows.append((tvd, prof["clock"], prog["clock"], s["samples"], sum(s["errors"].values()),
                     sum(s["losses"].values()), s["capture"]))
    acc[m] = rows
    tv = [x[0] for x in rows]
    lo, hi = q(tv)
    print(f"| {m} | **{med(tv):.3f}** | {lo:.3f} .. {hi:.3f} | {' '.join(f'{t:.3f}' for t in tv)} | "
          f"{100 * med(x[1] for x in rows):.2f}% ({100 * med(x[2] for x in rows):.2f}%) | "
          f"{med(x[3] for x in rows):.0f} | {med(x[4] for x in rows):.0f} | {med(x[5] for x in rows):.0f} |")
print()
b, p = med(x[0] for x in acc["bpf"]), med(x[0] for x in acc["ptrace"])
print(f"Goal: bpf TVD <= 0.03 and <= ptrace's: {'met' if b <= 0.03 and b <= p else 'missed'} "
      f"(bpf {b:.3f}, ptrace {p:.3f}).")
keys = sorted({k for x in acc["bpf"] for k in x[6]})
if keys:
    print()
    print("bpf capture counters per run (median): "
          + ", ".join(f"{k} {med(x[6].get(k, 0) for x in acc['bpf']):.0f}" for k in keys) + ".")
print()

print(f"### Scale (bench/workload.c, N busy threads for {run_s} s, 99 Hz, {runs} run(s) each, medians)")
print()
print("bpf: ticks = the target's ticks the capture program saw (capture.ticks), records = records it")
print("wrote. ptrace: tries = samples + losses (each an on-CPU thread's tick). Target CPU: its")
print("user + system time while recorded; 99 samples per CPU-second is every tick.")
print()
print("| threads | mode | samples | ticks / tries | samples / ticks | records / ticks | late_tick | stop_timeout | other losses | target CPU | record wall (JVM start included) | samples per target CPU-second |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|")
for n in (16, 64):
    for m in ("bpf", "ptrace"):
        rows = []
        for r in range(1, runs + 1):
            s = load(f"{w}/scale/{m}{n}-{r}.json")
            cpu = float(open(f"{w}/scale/{m}{n}-{r}.cpu").read())
            wall = float(open(f"{w}/scale/{m}{n}-{r}.wall").read())
            losses = s["losses"]
            late, st = losses.get("late_tick", 0), losses.get("stop_timeout", 0)
            other = sum(losses.values()) - late - st
            if m == "bpf":
                ticks = s["capture"].get("ticks", 0)
                recs = s["capture"].get("records", 0)
            else:
                ticks = s["samples"] + sum(losses.values())
                recs = None
            rows.append((s["samples"], ticks, recs, late, st, other, cpu, wall))
        smp, tk = med(x[0] for x in rows), med(x[1] for x in rows)
        ratio = med(x[0] / x[1] for x in rows if x[1])
        rr = "-" if m != "bpf" else f"{med(x[2] / x[1] for x in rows if x[1]):.3f}"
        per_cpu = med(x[0] / x[6] for x in rows if x[6] > 0)
        print(f"| {n} | {m} | {smp:.0f} | {tk:.0f} | **{ratio:.3f}** | {rr} | {med(x[3] for x in rows):.0f} | "
              f"{med(x[4] for x in rows):.0f} | {med(x[5] for x in rows):.0f} | {med(x[6] for x in rows):.2f} s | "
              f"{med(x[7] for x in rows):.1f} s | {per_cpu:.1f} |")
print()

print(f"### In-kernel cost per tick (kernel.bpf_stats_enabled=1, {run_s} s runs at 99 Hz, {runs} run(s) each, medians)")
print()
print("run_time_ns / run_cnt: the capture program's mean time per run over every tick of every task")
print("(most are other tasks': a map lookup and out). Per target tick: its whole run time over the")
print("target's ticks (capture.ticks), so the other runs are charged to the target's (an upper bound).")
print("C floor: bench/ptrace_floor.c's pause per sample (interrupt to resume) on the same program.")
print()
print("| workload | bpf ns per run | bpf ns per target tick | target ticks | runs | records / ticks | C floor pause, median | floor p99 | floor median / bpf per tick |")
print("|---|---|---|---|---|---|---|---|---|")
for wk, label in (("lua", f"phases.lua (LuaJIT, luajit {lj}, capture plan)"), ("native", "bench/workload.c -n (native)")):
    rows = []
    for r in range(1, runs + 1):
        p = load(f"{w}/cost/bpf_{wk}-{r}.prog")
        s = load(f"{w}/cost/bpf_{wk}-{r}.json")
        f = load(f"{w}/cost/floor_{wk}-{r}.json")["pause_ns"]
        ticks = s["capture"].get("ticks", 0)
        rows.append((p["run_time_ns"] / max(p["run_cnt"], 1), p["run_time_ns"] / max(ticks, 1), ticks,
                     p["run_cnt"], s["capture"].get("records", 0) / max(ticks, 1), f["median"], f["p99"]))
    per_tick, fm = med(x[1] for x in rows), med(x[5] for x in rows)
    print(f"| {label} | {med(x[0] for x in rows):.0f} | **{per_tick:.0f}** | {med(x[2] for x in rows):.0f} | "
          f"{med(x[3] for x in rows):.0f} | {med(x[4] for x in rows):.3f} | **{fm / 1000:.1f} us** | "
          f"{med(x[6] for x in rows) / 1000:.1f} us | {fm / per_tick:.0f}x |")
PY
} >"$work/table.md"

mkdir -p "$(dirname "$out")"
cp "$work/table.md" "$out"
cat "$work/table.md"
log "table written to $out"
