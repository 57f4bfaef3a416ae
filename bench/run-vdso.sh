#!/usr/bin/env bash
# vDSO tracing cost benchmark for polystack, measured in one run, side by side: the per-call
# cost that `polystack vdso` adds to a target calling clock_gettime, for each backend, next to
# bench/vdso-floor.c (the same mechanism in minimal C).
#
# Each run starts bench/vdso-workload.c, which blocks on a FIFO; the tracer attaches with --pid
# and arms; once it holds a perf_event breakpoint (and, for ptrace, is the workload's tracer)
# and a short settle time has passed, the script writes the go byte. The workload then makes
# W untimed warm-up calls (the JIT compiles polystack's hit path; every tracer gets them) and N
# timed calls, timing itself with the clock_gettime system call (never the traced vDSO).
#
# Configurations, in paired, interleaved and rotated rounds:
#   base-perf   / base-ptrace     the workload alone (N of the perf / ptrace configurations)
#   floor-perf  / floor-ptrace    under bench/vdso-floor -m perf / -m ptrace
#   ps-perf     / ps-ptrace       under polystack vdso --backend perf / ptrace --functions
#                                 clock_gettime --summary-only --json
#   floor-ptrace-spin             (with --spin) the ptrace floor with a spinning waitpid
# Per-call cost = (traced elapsed - untraced elapsed of the same round) / N; medians over rounds.
# Each tracer's count of completed calls is checked against the workload's W + N, with lost
# ring records and missed returns shown.
#
# Usage: bench/run-vdso.sh [--quick | --full] [--rounds N] [--out FILE] [--keep] [--no-wait]
#                          [--nice N] [--spin] [--halt-poll NS]
#   --quick     5 rounds, 20000 perf / 5000 ptrace calls per run (about 3 minutes on a quiet machine)
#   --full      7 rounds, 100000 perf / 20000 ptrace calls per run (about 10 minutes; default)
#   --rounds N  override the number of rounds
#   --out FILE  where to write the markdown table (default: bench/results/vdso-MODE.md)
#   --keep      keep the scratch directory (binaries, per-run outputs, logs)
#   --no-wait   do not wait for a quiet machine before each round (by default it waits, up to
#               30 s in all in quick mode and 120 s in full mode, for other processes to use
#               < 25% of the CPUs; the table reports what they used)
#   --nice N    run everything at niceness N (needs root)
#   --spin      also run the ptrace floor with a spinning (WNOHANG) waitpid
#   --halt-poll NS  set the guest's cpuidle halt polling to NS for the run, restored at the end
#               (root; see run-sampling.sh --help)
#   --boost     for a loaded, shared machine: run in a new session whose autogroup gets nice
#               -20 (/proc/self/autogroup), so the benchmark's processes (workload, tracers, the
#               whole JVM) get the CPUs when they want them, as on an idle machine, and others
#               get them back whenever it waits (needs root and kernel.sched_autogroup_enabled)
#
# Compare the figures as ratios within one run; absolute numbers move with the machine's load.
set -euo pipefail

root="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)"
bench_name=run-vdso
. "$root/bench/lib.sh"
args=("$@")
spin=0
boost=0
while [ $# -gt 0 ]; do
  common_option "$@"
  if [ "$consumed" = 0 ]; then
    case "$1" in
      --spin) spin=1 ;;
      --boost) boost=1 ;;
      *) echo "run-vdso.sh: unknown argument $1 (try --help)" >&2; exit 2 ;;
    esac
    consumed=1
  fi
  shift "$consumed"
done

if [ "$boost" = 1 ] && [ "${RUN_VDSO_BOOSTED:-}" != 1 ]; then
  # A new session gets a new autogroup; CFS weighs autogroups against each other.
  RUN_VDSO_BOOSTED=1 exec setsid -w "$0" "${args[@]}"
fi
if [ "$boost" = 1 ]; then
  echo -20 >/proc/self/autogroup || { echo "run-vdso.sh: cannot renice the autogroup" >&2; exit 1; }
fi
if [ -n "$nice_level" ] && [ "${RUN_VDSO_NICED:-}" != 1 ]; then
  RUN_VDSO_NICED=1 exec nice -n "$nice_level" "$0" "${args[@]}"
fi

if [ "$mode" = quick ]; then
  n_perf=20000; w_perf=5000; n_ptrace=5000; w_ptrace=2000
  : "${rounds:=5}"
  wait_budget=30
else
  n_perf=100000; w_perf=10000; n_ptrace=20000; w_ptrace=3000
  : "${rounds:=7}"
  wait_budget=120
fi
settle=0.5   # after arming, before the go: the same for every configuration
: "${out:=$root/bench/results/vdso-$mode.md}"

require_tools gcc java awk mkfifo setsid
make_work /tmp/polystack-vdso-bench.XXXXXX
apply_halt_poll

log "building bench/vdso-workload.c and bench/vdso-floor.c"
gcc -O2 -Wall -o "$work/workload" "$root/bench/vdso-workload.c"
gcc -O2 -Wall -o "$work/floor" "$root/bench/vdso-floor.c"
build_polystack

# Waits until tracer $1 has armed workload $2: it holds a perf_event file descriptor and, in
# ptrace mode ($3), is the workload's tracer. polystack prints nothing when armed with
# --summary-only, so this looks at /proc, which works the same for both tracers.
wait_armed() {
  local t="$1" w="$2" m="$3" i tp
  for ((i = 0; i < 1200; i++)); do
    kill -0 "$t" 2>/dev/null || return 1
    if [ -n "$(find "/proc/$t/fd" -lname '*perf_event*' -print -quit 2>/dev/null)" ]; then
      # TracerPid names the tracer's thread (polystack's tracer thread), not its process.
      tp="$(awk '/^TracerPid/ {print $2}' "/proc/$w/status")"
      if [ "$m" = perf ] || { [ "$tp" != 0 ] && [ -d "/proc/$t/task/$tp" ]; }; then
        return 0
      fi
    fi
    sleep 0.05
  done
  return 1
}

mkdir -p "$work/out" "$work/logs"
# One run: prints "ELAPSED_NS CALLS TRACED_CALLS LOST MISSED" (tracer fields "-" for baselines).
run_config() { # config round
  local c="$1" r="$2" m n w fifo="$work/go" res="$work/out/$1-$2.wl" tout="$work/out/$1-$2.trace"
  local logf="$work/logs/$1-$2.log"
  # run_config runs in a command substitution: a failure must not leave the workload blocked on
  # its FIFO nor the tracer attached (a TERM makes both tracers detach cleanly).
  wpid="" tpid=""
  trap 'kill $wpid $tpid 2>/dev/null || true' EXIT
  case "$c" in
    *perf*) m=perf; n=$n_perf; w=$w_perf ;;
    *) m=ptrace; n=$n_ptrace; w=$w_ptrace ;;
  esac
  rm -f "$fifo" "$res" "$tout"
  mkfifo "$fifo"
  "$work/workload" -g "$fifo" -n "$n" -w "$w" -o "$res" >"$logf" 2>&1 &
  wpid=$!
  # $! is the shell's fork: a tracer that attached before the exec would arm breakpoints at the
  # shell's vDSO, which the exec removes. Wait until the workload binary runs.
  until [ "$(readlink "/proc/$wpid/exe" 2>/dev/null)" = "$work/workload" ]; do
    kill -0 "$wpid" 2>/dev/null || die "$c (round $r): the workload did not start: $(tail -3 "$logf")"
    sleep 0.01
  done
  case "$c" in
    base-*) ;;
    floor-ptrace-spin) "$work/floor" -m ptrace -S -p "$wpid" -o "$tout" >>"$logf" 2>&1 & tpid=$! ;;
    floor-*) "$work/floor" -m "$m" -p "$wpid" -o "$tout" >>"$logf" 2>&1 & tpid=$! ;;
    ps-*) "${ps[@]}" vdso --pid "$wpid" --backend "$m" --functions clock_gettime --summary-only \
            --json -o "$tout" >>"$logf" 2>&1 & tpid=$! ;;
    *) die "unknown configuration $c" ;;
  esac
  if [ -n "$tpid" ]; then
    wait_armed "$tpid" "$wpid" "$m" || die "$c (round $r): the tracer did not arm; see $(tail -3 "$logf")"
  fi
  sleep "$settle"
  echo go >"$fifo"
  wait "$wpid" || die "$c (round $r): the workload failed: $(tail -3 "$logf")"
  if [ -n "$tpid" ]; then
    wait "$tpid" || die "$c (round $r): the tracer failed: $(tail -3 "$logf")"
  fi
  wpid="" tpid=""
  local e calls traced="-" lost="-" missed="-"
  e="$(awk '/^elapsed_ns/ {print $2}' "$res")"
  calls="$(awk '/^calls/ {print $2}' "$res")"
  case "$c" in
    floor-*)
      traced="$(awk '$1 == "calls" {print $2}' "$tout")"
      lost="$(awk '$1 == "lost" {print $2}' "$tout")"
      missed="$(awk '$1 == "return_missed" {print $2}' "$tout")" ;;
    ps-*)
      local s
      s="$(grep '"type":"session_summary"' "$tout")"
      traced="$(sed -n 's/.*"session":"[^"]*","calls":\([0-9]*\).*/\1/p' <<<"$s")"
      lost="$(sed -n 's/.*"ring_lost":\([0-9]*\).*/\1/p' <<<"$s")"; : "${lost:=0}"
      missed="$(sed -n 's/.*"return_missed":\([0-9]*\).*/\1/p' <<<"$s")"; : "${missed:=0}" ;;
  esac
  echo "$e $calls $traced $lost $missed"
}

configs=(base-perf floor-perf ps-perf base-ptrace floor-ptrace ps-ptrace)
[ "$spin" = 1 ] && configs+=(floor-ptrace-spin)
load_start="$(cut -d' ' -f1-3 /proc/loadavg)"
started=$(date +%s)
log "$rounds rounds of ${#configs[@]} configurations (load $load_start)"
declare -A res
record_res() { # config round
  res[$1,$2]="$(run_config "$1" "$2")"
  shown="$(awk -v e="${res[$1,$2]%% *}" 'BEGIN {printf "%.3fs", e / 1e9}')"
}
paired_rounds record_res
load_end="$(cut -d' ' -f1-3 /proc/loadavg)"
took=$(($(date +%s) - started))

field() { # config round index (1-based)
  awk -v i="$3" '{print $i}' <<<"${res[$1,$2]}"
}
# Per-call cost of a configuration in each round, in ns: (traced - baseline) / N.
per_call() { # config baseline n
  for ((r = 1; r <= rounds; r++)); do
    awk -v a="$(field "$1" "$r" 1)" -v b="$(field "$2" "$r" 1)" -v n="$3" 'BEGIN {printf "%.1f\n", (a - b) / n}'
  done
}
sum_field() { for ((r = 1; r <= rounds; r++)); do field "$1" "$r" "$2"; done | awk '{s += $1} END {print s + 0}'; }
range_us() { sort -g | awk 'NR == 1 {lo = $1} {hi = $1} END {printf "%.1f .. %.1f", lo / 1000, hi / 1000}'; }

{
  echo "## vDSO tracing cost ($mode run, $(date -u +%Y-%m-%dT%H:%MZ))"
  echo
  echo "Machine: $(machine_info), $(halt_poll_info). Niceness: $(nice).$([ "$boost" = 1 ] && echo " Autogroup niceness -20 (--boost): $(cat /proc/self/autogroup).")"
  echo "Load average at start: $load_start; at end: $load_end. Took ${took}s (${waited}s of it waiting for a quiet machine)."
  echo "CPU use by other processes in the second before each round: ${busy_rounds[*]/%/%}."
  echo "Workload: bench/vdso-workload.c, clock_gettime(CLOCK_MONOTONIC) through libc; perf runs $w_perf + $n_perf"
  echo "calls, ptrace runs $w_ptrace + $n_ptrace calls (warm-up + timed); $rounds interleaved rounds; medians over rounds."
  echo "Untraced call: $(for ((r = 1; r <= rounds; r++)); do awk -v e="$(field base-perf "$r" 1)" -v n="$n_perf" 'BEGIN {print e / n}'; done | median | awk '{printf "%.0f", $1}') ns."
  echo
  echo "| backend | floor (C) per call | polystack per call | ratio | floor range | polystack range | calls recorded of expected, floor / polystack | lost records, floor / polystack | returns missed, floor / polystack |"
  echo "|---|---|---|---|---|---|---|---|---|"
  for m in perf ptrace; do
    nn=n_$m
    f="$(per_call "floor-$m" "base-$m" "${!nn}" | median)"
    p="$(per_call "ps-$m" "base-$m" "${!nn}" | median)"
    expected=$(( $(sum_field "base-$m" 2) ))
    echo "| $m | $(us "$f") us | $(us "$p") us | **$(ratio "$p" "$f")x** | $(per_call "floor-$m" "base-$m" "${!nn}" | range_us) | $(per_call "ps-$m" "base-$m" "${!nn}" | range_us) | $(sum_field "floor-$m" 3) / $(sum_field "ps-$m" 3) of $expected | $(sum_field "floor-$m" 4) / $(sum_field "ps-$m" 4) | $(sum_field "floor-$m" 5) / $(sum_field "ps-$m" 5) |"
  done
  if [ "$spin" = 1 ]; then
    s="$(per_call floor-ptrace-spin base-ptrace "$n_ptrace" | median)"
    echo
    echo "ptrace floor with a spinning waitpid: $(us "$s") us per call ($(per_call floor-ptrace-spin base-ptrace "$n_ptrace" | range_us)); polystack / spinning floor: $(ratio "$(per_call ps-ptrace base-ptrace "$n_ptrace" | median)" "$s")x."
  fi
  echo
  echo "Goal: polystack <= 1.3x the floor for both backends."
} >"$work/table.md"

mkdir -p "$(dirname "$out")"
cp "$work/table.md" "$out"
cat "$work/table.md"
log "table written to $out"
