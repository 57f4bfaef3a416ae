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
#   base-bpf / base-perf / base-ptrace     the workload alone (N of that backend's runs)
#   floor-bpf                     under bench/vdso-bpf-floor (libbpf: entry and ret
#                                 breakpoints with a BPF handler each, a ring drain)
#   floor-perf  / floor-ptrace    under bench/vdso-floor -m perf / -m ptrace
#   ps-bpf / ps-perf / ps-ptrace  under polystack vdso --backend bpf / perf / ptrace
#                                 --functions clock_gettime --summary-only --json
#   floor-ptrace-spin             (with --spin) the ptrace floor with a spinning waitpid
# Per-call cost = (traced elapsed - untraced elapsed of the same round) / N; medians over rounds.
# Each tracer's count of completed calls is checked against the workload's W + N, with lost
# ring records and missed returns shown.
#
# Usage: bench/run-vdso.sh [--quick | --full] [--rounds N] [--out FILE] [--keep] [--no-wait]
#                          [--nice N] [--spin] [--halt-poll NS]
#   --quick     5 rounds, 20000 bpf and perf / 5000 ptrace calls per run (about 4 minutes on a
#               quiet machine)
#   --full      7 rounds, 100000 bpf and perf / 20000 ptrace calls per run (about 14 minutes;
#               default)
#   --only LIST backends to run, comma-separated (bpf,perf,ptrace; default all three)
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
only=bpf,perf,ptrace
while [ $# -gt 0 ]; do
  common_option "$@"
  if [ "$consumed" = 0 ]; then
    consumed=1
    case "$1" in
      --spin) spin=1 ;;
      --boost) boost=1 ;;
      --only) only="$2"; consumed=2 ;;
      *) echo "run-vdso.sh: unknown argument $1 (try --help)" >&2; exit 2 ;;
    esac
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
case ",$only," in *,bpf,*) require_tools clang objdump python3 ;; esac
make_work /tmp/polystack-vdso-bench.XXXXXX
apply_halt_poll

log "building bench/vdso-workload.c and bench/vdso-floor.c"
gcc -O2 -Wall -o "$work/workload" "$root/bench/vdso-workload.c"
gcc -O2 -Wall -o "$work/floor" "$root/bench/vdso-floor.c"
case ",$only," in
  *,bpf,*)
    log "building bench/vdso-bpf-floor.c (libbpf) and its BPF handler"
    clang -O2 -g -target bpf -I/usr/include/x86_64-linux-gnu \
      -c "$root/bench/vdso-bpf-floor.bpf.c" -o "$work/bpf-floor.bpf.o"
    gcc -O2 -Wall -o "$work/bpf-floor" "$root/bench/vdso-bpf-floor.c" -lbpf \
      || die "cannot build the BPF floor: install libbpf-dev"
    # The floor's addresses: clock_gettime's entry and ret instructions in this kernel's vDSO
    # (every process maps the same image), from objdump of this process's copy.
    python3 - "$work/vdso.so" <<'EOF'
import sys
for line in open("/proc/self/maps"):
    if line.rstrip().endswith("[vdso]"):
        lo, hi = (int(x, 16) for x in line.split()[0].split("-"))
        with open("/proc/self/mem", "rb") as m:
            m.seek(lo)
            open(sys.argv[1], "wb").write(m.read(hi - lo))
EOF
    read -r bpf_entry bpf_rets < <(python3 - "$work/vdso.so" <<'EOF'
import re, subprocess, sys
so = sys.argv[1]
sym = [l.split() for l in subprocess.run(["objdump", "-T", so], capture_output=True,
       text=True, check=True).stdout.splitlines() if l.endswith(" __vdso_clock_gettime")][0]
lo, hi = int(sym[0], 16), int(sym[0], 16) + int(sym[4], 16)
rets = [int(m.group(1), 16) for m in re.finditer(r"^ +([0-9a-f]+):\t[^\n]*\tret",
        subprocess.run(["objdump", "-d", so], capture_output=True, text=True,
        check=True).stdout, re.M)]
print(hex(lo), ",".join(hex(a) for a in rets if lo <= a < hi))
EOF
)
    [ -n "$bpf_rets" ] || die "no ret instruction found in clock_gettime's vDSO code"
    log "clock_gettime at $bpf_entry, ret at $bpf_rets" ;;
esac
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
      if [ "$m" != ptrace ] || { [ "$tp" != 0 ] && [ -d "/proc/$t/task/$tp" ]; }; then
        return 0
      fi
    fi
    sleep 0.05
  done
  return 1
}

mkdir -p "$work/out" "$work/logs"
# One run: prints "ELAPSED_NS CALLS TRACED_CALLS LOST MISSED SIGTRAPS" (tracer fields "-" for
# baselines; SIGTRAPS: what the workload received, see vdso-workload.c).
run_config() { # config round
  local c="$1" r="$2" m n w fifo="$work/go" res="$work/out/$1-$2.wl" tout="$work/out/$1-$2.trace"
  local logf="$work/logs/$1-$2.log"
  # run_config runs in a command substitution: a failure must not leave the workload blocked on
  # its FIFO nor the tracer attached (a TERM makes both tracers detach cleanly).
  wpid="" tpid=""
  trap 'kill $wpid $tpid 2>/dev/null || true' EXIT
  case "$c" in
    *bpf*) m=bpf; n=$n_perf; w=$w_perf ;;
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
    floor-bpf) "$work/bpf-floor" -p "$wpid" -B "$work/bpf-floor.bpf.o" -e "$bpf_entry" \
                 -r "$bpf_rets" -o "$tout" >>"$logf" 2>&1 & tpid=$! ;;
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
      lost="$(sed -n 's/.*"\(ring_lost\|ring_full\)":\([0-9]*\).*/\2/p' <<<"$s")"; : "${lost:=0}"
      missed="$(sed -n 's/.*"\(return_missed\|unpaired_return\)":\([0-9]*\).*/\2/p' <<<"$s")"
      : "${missed:=0}" ;;
  esac
  echo "$e $calls $traced $lost $missed $(awk '/^sigtraps/ {print $2}' "$res")"
}

configs=()
for m in bpf perf ptrace; do
  case ",$only," in *,"$m",*) configs+=("base-$m" "floor-$m" "ps-$m") ;; esac
done
[ "${#configs[@]}" -gt 0 ] || die "--only $only: expected bpf, perf and/or ptrace"
n_bpf=$n_perf
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
  echo "Workload: bench/vdso-workload.c, clock_gettime(CLOCK_MONOTONIC) through libc; bpf and perf runs $w_perf + $n_perf"
  echo "calls, ptrace runs $w_ptrace + $n_ptrace calls (warm-up + timed); $rounds interleaved rounds; medians over rounds."
  b0="${configs[0]}"
  echo "Untraced call: $(for ((r = 1; r <= rounds; r++)); do awk -v e="$(field "$b0" "$r" 1)" -v n="$n_perf" 'BEGIN {print e / n}'; done | median | awk '{printf "%.0f", $1}') ns."
  echo
  echo "| backend | floor (C) per call | polystack per call | ratio | floor range | polystack range | calls recorded of expected, floor / polystack | lost records, floor / polystack | returns missed, floor / polystack |"
  echo "|---|---|---|---|---|---|---|---|---|"
  for m in bpf perf ptrace; do
    case ",$only," in *,"$m",*) ;; *) continue ;; esac
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
  echo -n "SIGTRAPs the workload received (spurious: a breakpoint #DB with DR6 = 0, docs/vdso.md), floor / polystack:"
  for m in bpf perf ptrace; do
    case ",$only," in *,"$m",*) echo -n " $m $(sum_field "floor-$m" 6) / $(sum_field "ps-$m" 6);" ;; esac
  done
  echo
  case ",$only," in
    *,bpf,*ptrace,*)
      b="$(per_call ps-bpf base-bpf "$n_bpf" | median)"
      t="$(per_call ps-ptrace base-ptrace "$n_ptrace" | median)"
      echo
      echo "polystack bpf backend against its ptrace backend, per call: $(us "$b") us / $(us "$t") us: **$(ratio "$t" "$b")x cheaper**." ;;
  esac
  echo
  echo "Goals: polystack <= 1.3x the floor for perf and ptrace, <= 1.5x for bpf; bpf >= 3x cheaper than ptrace."
} >"$work/table.md"

mkdir -p "$(dirname "$out")"
cp "$work/table.md" "$out"
cat "$work/table.md"
log "table written to $out"
