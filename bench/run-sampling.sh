#!/usr/bin/env bash
# Sampling cost benchmark for polystack, measured in one run, side by side:
#
#   1. target pause per sample (median, p99) of `polystack record --mode ptrace` at 99 and
#      999 Hz, next to bench/ptrace_floor.c (the same mechanism in minimal C) on the same
#      workload: ratio polystack / floor;
#   2. target slowdown: wall time of a fixed amount of work (bench/workload.c, which times
#      itself) in paired, interleaved rounds: baseline, ptrace floor 99/999 Hz, polystack
#      --mode ptrace 99/999 Hz, `perf record -F 99 --call-graph dwarf`, polystack --mode perf
#      and --mode bpf 99/999 Hz (each when the build and the machine have it);
#   3. host cost: polystack's CPU time (user+sys) per 1000 samples and peak RSS in ptrace, perf
#      and bpf modes, recording a 16-thread workload for 60 s (10 s in quick mode) at 99 Hz,
#      next to `perf record -F 99 --call-graph dwarf -p` on the same workload (and the
#      `perf report` that unwinds its samples, which polystack does while it records).
#
# Usage: bench/run-sampling.sh [--quick | --full] [--rounds N] [--out FILE] [--keep] [--no-wait]
#                              [--nice N] [--halt-poll NS]
#   --quick     ~2 s of work per run, 3 rounds, 10 s host-cost records (about 4 minutes on a quiet machine)
#   --full      ~6 s of work per run, 7 rounds, 60 s host-cost records (about 15 minutes on a quiet machine; default)
#   --rounds N  override the number of rounds
#   --out FILE  where to write the markdown table (default: bench/results/sampling-MODE.md)
#   --keep      keep the scratch directory (binaries, per-run JSON, timings)
#   --no-wait   do not wait for a quiet machine before each round (by default it waits, up to
#               30 s in all in quick mode and 120 s in full mode, for other processes to use
#               < 25% of the CPUs; the table reports what they used)
#   --nice N    run everything (workload, floor, perf, polystack) at niceness N, e.g. -10 to
#               keep other work on a shared machine from dominating the figures (needs root;
#               no effect against other sessions when kernel.sched_autogroup_enabled = 1)
#   --halt-poll NS  set the guest's cpuidle halt polling (/sys/module/haltpoll/parameters/
#               guest_halt_poll_ns) to NS for the run and restore it at the end (root); on a VM
#               that halts idle vCPUs at once (0), waking them dominates the cost of a stop
#
# Compare the figures as ratios within one run; absolute numbers move with the machine's load.
set -euo pipefail

root="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)"
bench_name=run-sampling
. "$root/bench/lib.sh"
args=("$@")
while [ $# -gt 0 ]; do
  common_option "$@"
  [ "$consumed" -gt 0 ] || { echo "run-sampling.sh: unknown argument $1 (try --help)" >&2; exit 2; }
  shift "$consumed"
done

if [ -n "$nice_level" ] && [ "${RUN_SAMPLING_NICED:-}" != 1 ]; then
  RUN_SAMPLING_NICED=1 exec nice -n "$nice_level" "$0" "${args[@]}"
fi

if [ "$mode" = quick ]; then
  iterations=6000      # ~2 s on this machine
  : "${rounds:=3}"
  host_seconds=10
  wait_budget=30
else
  iterations=20000     # ~6 s on this machine
  : "${rounds:=7}"
  host_seconds=60
  wait_budget=120
fi
host_threads=16
: "${out:=$root/bench/results/sampling-$mode.md}"

require_tools gcc java perf /usr/bin/time awk
make_work /tmp/polystack-bench.XXXXXX
apply_halt_poll

# ---------------------------------------------------------------------------------------------
# Build
log "building bench/workload.c and bench/ptrace_floor.c"
gcc -O2 -fomit-frame-pointer -pthread -o "$work/workload" "$root/bench/workload.c"
gcc -O2 -Wall -o "$work/ptrace_floor" "$root/bench/ptrace_floor.c"
build_polystack
wl="$work/workload"
pf="$work/ptrace_floor"

# Does this build have --mode perf? Try it on a short run.
ps_perf=0
if "${ps[@]}" record --mode perf --rate 99 --format folded -o "$work/probe.folded" \
    -- "$wl" -n 300 -o /dev/null >"$work/probe.log" 2>&1; then
  ps_perf=1
  log "polystack --mode perf: available"
else
  log "polystack --mode perf: not available here ($(grep -m1 -i 'perf' "$work/probe.log" || true))"
fi

# Does this build load --mode bpf here (libbpf1, root, a kernel with BPF)? Try it the same way.
ps_bpf=0
if "${ps[@]}" record --mode bpf --rate 99 --format folded -o "$work/probe.folded" \
    -- "$wl" -n 300 -o /dev/null >"$work/probe-bpf.log" 2>&1; then
  ps_bpf=1
  log "polystack --mode bpf: available"
else
  log "polystack --mode bpf: not available ($(grep -m1 -i 'bpf' "$work/probe-bpf.log" || true))"
fi

# perf record with DWARF call graphs (cpu-clock: there is no PMU in this VM).
perf_ok=0
if perf record -q -e cpu-clock -F 99 --call-graph dwarf -o "$work/perf.data" -- true \
    >/dev/null 2>&1; then
  perf_ok=1
fi
rm -f "$work/perf.data"

# ---------------------------------------------------------------------------------------------
# One run of a configuration: prints the workload's elapsed nanoseconds; pause statistics (for
# the samplers that report them) go to $work/json/CONFIG-ROUND.json.
mkdir -p "$work/json" "$work/logs"
run_config() { # config round
  local c="$1" r="$2" res="$work/elapsed" json="$work/json/$1-$2.json" logf="$work/logs/$1-$2.log"
  rm -f "$res"
  case "$c" in
    baseline) "$wl" -n "$iterations" -o "$res" >"$logf" 2>&1 ;;
    floor99) "$pf" -r 99 -j "$json" -- "$wl" -n "$iterations" -o "$res" >"$logf" 2>&1 ;;
    floor999) "$pf" -r 999 -j "$json" -- "$wl" -n "$iterations" -o "$res" >"$logf" 2>&1 ;;
    ptrace99|ptrace999|psperf99|psperf999|psbpf99|psbpf999)
      local rate=${c##*[a-z]} m=ptrace
      [ "${c#psperf}" != "$c" ] && m=perf
      [ "${c#psbpf}" != "$c" ] && m=bpf
      "${ps[@]}" record --mode "$m" --rate "$rate" --format folded -o "$work/profile.folded" \
        --stats-json "$json" -- "$wl" -n "$iterations" -o "$res" >"$logf" 2>&1 ;;
    perf99)
      perf record -q -e cpu-clock -F 99 --call-graph dwarf -o "$work/perf.data" \
        -- "$wl" -n "$iterations" -o "$res" >"$logf" 2>&1
      rm -f "$work/perf.data" ;;
    *) die "unknown configuration $c" ;;
  esac || die "$c (round $r) failed; see below:
$(tail -5 "$logf")"
  awk '/^elapsed_ns/ {print $2}' "$res"
}

configs=(baseline floor99 floor999 ptrace99 ptrace999)
[ "$perf_ok" = 1 ] && configs+=(perf99)
[ "$ps_perf" = 1 ] && configs+=(psperf99 psperf999)
[ "$ps_bpf" = 1 ] && configs+=(psbpf99 psbpf999)

load_start="$(cut -d' ' -f1-3 /proc/loadavg)"
started=$(date +%s)
log "$rounds rounds of ${#configs[@]} configurations, $iterations iterations each (load $load_start)"
declare -A elapsed
record_elapsed() { # config round
  local e
  e="$(run_config "$1" "$2")"
  elapsed[$1,$2]=$e
  shown="$(awk -v e="$e" 'BEGIN {printf "%.2fs", e / 1e9}')"
}
paired_rounds record_elapsed

# ---------------------------------------------------------------------------------------------
# Host cost: polystack attached for host_seconds to 16 busy threads at 99 Hz, in each mode.
host_modes=(ptrace)
[ "$ps_perf" = 1 ] && host_modes+=(perf)
[ "$ps_bpf" = 1 ] && host_modes+=(bpf)
quiet
host_busy=$busy
log "host cost: ${host_seconds}s records of $host_threads threads at 99 Hz in ${host_modes[*]} mode (other CPU use before: $host_busy%)"
# One record of a 16-thread workload that polystack launches (so the JVM is up before 16 busy
# threads share the 2 vCPUs with it) and kills at the end of --duration:
# host_record SECONDS NAME MODE
host_record() {
  /usr/bin/time -f "%e %U %S %M" -o "$work/$2.time" "${ps[@]}" record --mode "$3" --rate 99 \
    --duration "$1s" --format folded -o "$work/$2.folded" --stats-json "$work/$2.json" \
    -- "$wl" -t "$host_threads" -s $(($1 + 60)) >"$work/logs/$2.log" 2>&1 \
    || die "host-cost record ($3 mode, $1 s) failed: $(tail -3 "$work/logs/$2.log")"
}
for m in "${host_modes[@]}"; do
  # ptrace keeps the names host and host1: the first table below is its own.
  n=host; [ "$m" = ptrace ] || n=host-$m
  host_record "$host_seconds" "$n" "$m"
  # The fixed part (JVM start, attach, writing the profile): the same with a 1 s record.
  host_record 1 "${n/host/host1}" "$m"
done
# perf record on the same workload, attached (-p) so that /usr/bin/time counts perf alone, and
# the perf report that unwinds the DWARF stack copies (polystack unwinds while it records).
if [ "$perf_ok" = 1 ]; then
  "$wl" -t "$host_threads" -s $((host_seconds + 30)) >"$work/logs/perf-host-workload.log" 2>&1 &
  perf_host_wl=$!
  sleep 0.5
  /usr/bin/time -f "%e %U %S %M" -o "$work/perf-host.time" perf record -q -e cpu-clock -F 99 \
    --call-graph dwarf -p "$perf_host_wl" -o "$work/perf-host.data" -- sleep "$host_seconds" \
    >"$work/logs/perf-host.log" 2>&1 || die "host-cost perf record failed: $(tail -3 "$work/logs/perf-host.log")"
  kill "$perf_host_wl" 2>/dev/null || true
  wait "$perf_host_wl" 2>/dev/null || true
  perf_host_samples="$(perf script -i "$work/perf-host.data" -F tid 2>/dev/null | wc -l)"
  /usr/bin/time -f "%e %U %S %M" -o "$work/perf-report.time" perf report -i "$work/perf-host.data" \
    --stdio >/dev/null 2>"$work/logs/perf-report.log" || log "perf report failed: $(tail -1 "$work/logs/perf-report.log")"
  rm -f "$work/perf-host.data"
fi
load_end="$(cut -d' ' -f1-3 /proc/loadavg)"
took=$(($(date +%s) - started))

# ---------------------------------------------------------------------------------------------
# Figures
# A number from a stats JSON file: jnum FILE KEY (first occurrence of "KEY": N).
jnum() { sed -n "s/.*\"$2\": \([0-9.]*\).*/\1/p" "$1" | head -1; }
# The per-round values of a JSON field for one configuration, one per line.
per_round() { for ((r = 1; r <= rounds; r++)); do jnum "$work/json/$1-$r.json" "$2"; done; }
losses_of() { # summed loss counters over the rounds, e.g. "late_tick 12"
  for ((r = 1; r <= rounds; r++)); do
    sed -n 's/.*"losses": {\([^}]*\)}.*/\1/p' "$work/json/$1-$r.json" | tr ',' '\n'
  done | awk -F': ' 'NF == 2 {gsub(/[" ]/, "", $1); s[$1] += $2} END {for (k in s) printf "%s%s %d", (n++ ? ", " : ""), k, s[k]}'
}

base_med="$(for ((r = 1; r <= rounds; r++)); do echo "${elapsed[baseline,$r]}"; done | median)"
describe() {
  case "$1" in
    baseline) echo "baseline (no profiler)" ;;
    floor99) echo "ptrace floor (C), 99 Hz" ;;
    floor999) echo "ptrace floor (C), 999 Hz" ;;
    ptrace99) echo "polystack ptrace, 99 Hz" ;;
    ptrace999) echo "polystack ptrace, 999 Hz" ;;
    perf99) echo "perf record -F 99 --call-graph dwarf" ;;
    psperf99) echo "polystack --mode perf, 99 Hz" ;;
    psperf999) echo "polystack --mode perf, 999 Hz" ;;
    psbpf99) echo "polystack --mode bpf, 99 Hz" ;;
    psbpf999) echo "polystack --mode bpf, 999 Hz" ;;
  esac
}

{
  echo "## Sampling cost ($mode run, $(date -u +%Y-%m-%dT%H:%MZ))"
  echo
  echo "Machine: $(machine_info), $(halt_poll_info). Niceness of all measured processes: $(nice)."
  echo "Load average at start: $load_start; at end: $load_end. Took ${took}s (${waited}s of it waiting for a quiet machine)."
  echo "CPU use by other processes in the second before each round: ${busy_rounds[*]/%/%}; before the host-cost record: $host_busy%."
  echo "Workload: bench/workload.c -O2 -fomit-frame-pointer, $iterations iterations (baseline median"
  echo "$(awk -v e="$base_med" 'BEGIN {printf "%.2f", e / 1e9}') s), $rounds interleaved rounds; medians over rounds."
  echo
  echo "### Target pause per sample (interrupt to resume)"
  echo
  echo "| rate | polystack median | floor median | ratio | polystack p99 | floor p99 | ratio | polystack samples/run, losses |"
  echo "|---|---|---|---|---|---|---|---|"
  for rate in 99 999; do
    pm="$(per_round "ptrace$rate" median | median)"; fm="$(per_round "floor$rate" median | median)"
    pp="$(per_round "ptrace$rate" p99 | median)"; fp="$(per_round "floor$rate" p99 | median)"
    pn="$(per_round "ptrace$rate" count | median)"
    lo="$(losses_of "ptrace$rate")"
    echo "| $rate Hz | $(us "$pm") us | $(us "$fm") us | **$(ratio "$pm" "$fm")x** | $(us "$pp") us | $(us "$fp") us | **$(ratio "$pp" "$fp")x** | $pn${lo:+; $lo} |"
  done
  echo
  echo "Goal: polystack / floor <= 1.5x (median and p99)."
  echo
  echo "### Target slowdown (wall time of the fixed work)"
  echo
  echo "| configuration | median elapsed | slowdown vs baseline (median of paired rounds) | range over rounds |"
  echo "|---|---|---|---|"
  for c in "${configs[@]}"; do
    med="$(for ((r = 1; r <= rounds; r++)); do echo "${elapsed[$c,$r]}"; done | median)"
    pairs="$(for ((r = 1; r <= rounds; r++)); do
      awk -v a="${elapsed[$c,$r]}" -v b="${elapsed[baseline,$r]}" 'BEGIN {printf "%.2f\n", (a / b - 1) * 100}'
    done)"
    pmed="$(echo "$pairs" | median)"
    range="$(echo "$pairs" | sort -g | awk 'NR == 1 {lo = $1} {hi = $1} END {printf "%+.1f%% .. %+.1f%%", lo, hi}')"
    if [ "$c" = baseline ]; then
      echo "| $(describe "$c") | $(awk -v e="$med" 'BEGIN {printf "%.3f s", e / 1e9}') | - | - |"
    else
      echo "| $(describe "$c") | $(awk -v e="$med" 'BEGIN {printf "%.3f s", e / 1e9}') | $(awk -v p="$pmed" 'BEGIN {printf "%+.1f%%", p}') | $range |"
    fi
  done
  [ "$perf_ok" = 1 ] || echo "| perf record -F 99 --call-graph dwarf | not available (perf record failed) | | |"
  [ "$ps_perf" = 1 ] || echo "| polystack --mode perf, 99/999 Hz | not available here (see the log) | | |"
  [ "$ps_bpf" = 1 ] || echo "| polystack --mode bpf, 99/999 Hz | not available here (see the log) | | |"
  echo
  echo "Goal: <= 1% slowdown at 99 Hz."
  echo
  echo "### Host cost of polystack --mode ptrace (record -- workload, 99 Hz, $host_threads busy threads on $(nproc) vCPUs)"
  echo
  echo "polystack's own CPU time and peak RSS, from its --stats-json (the JVM's own figures: the launched"
  echo "workload's CPU, which /usr/bin/time would add, is not in them); wall time from /usr/bin/time."
  echo
  read -r wall user sys rss <"$work/host.time"
  read -r wall1 user1 sys1 rss1 <"$work/host1.time"
  samples="$(jnum "$work/host.json" samples)"; samples1="$(jnum "$work/host1.json" samples)"
  hz="$(jnum "$work/host.json" achieved_hz)"
  cpu="$(jnum "$work/host.json" cpu_ns)"; cpu1="$(jnum "$work/host1.json" cpu_ns)"
  kib="$(jnum "$work/host.json" peak_rss_kib)"; kib1="$(jnum "$work/host1.json" peak_rss_kib)"
  echo "| record | wall | samples | polystack CPU | CPU per 1000 samples | peak RSS | achieved Hz per thread |"
  echo "|---|---|---|---|---|---|---|"
  echo "| ${host_seconds} s | ${wall} s | $samples | $(awk -v c="$cpu" 'BEGIN {printf "%.2f s", c / 1e9}') | $(awk -v c="$cpu" -v n="$samples" 'BEGIN {printf "%.1f ms", c / 1e6 * 1000 / n}') | $((kib / 1024)) MiB | $hz |"
  echo "| 1 s (fixed part) | ${wall1} s | $samples1 | $(awk -v c="$cpu1" 'BEGIN {printf "%.2f s", c / 1e9}') | | $((kib1 / 1024)) MiB | $(jnum "$work/host1.json" achieved_hz) |"
  echo "| marginal (difference) | | $((samples - samples1)) | $(awk -v a="$cpu" -v b="$cpu1" 'BEGIN {printf "%.2f s", (a - b) / 1e9}') | $(awk -v a="$cpu" -v b="$cpu1" -v n="$((samples - samples1))" 'BEGIN {printf "%.1f ms", (a - b) / 1e6 * 1000 / n}') | | |"
  lo="$(sed -n 's/.*"losses": {\([^}]*\)}.*/\1/p' "$work/host.json")"
  echo
  echo "Host-cost run losses: ${lo:-none}; pause per sample there: median $(us "$(jnum "$work/host.json" median)") us, p99 $(us "$(jnum "$work/host.json" p99)") us."
  echo
  echo "### Host cost per mode, next to perf record (the same workload, ${host_seconds} s at 99 Hz)"
  echo
  echo "polystack: its own CPU and peak RSS (--stats-json); marginal = the ${host_seconds} s record minus a 1 s one"
  echo "(JVM start, attach, write-out). perf: /usr/bin/time around \`perf record -e cpu-clock -F 99"
  echo "--call-graph dwarf -p PID -- sleep ${host_seconds}\` (attached, so the workload is not counted), then"
  echo "around \`perf report --stdio\` of its data, which unwinds the stack copies."
  echo
  echo "| configuration | samples | CPU | CPU per 1000 samples | marginal CPU per 1000 samples | peak RSS | achieved Hz per thread | losses |"
  echo "|---|---|---|---|---|---|---|---|"
  for m in "${host_modes[@]}"; do
    n=host; [ "$m" = ptrace ] || n=host-$m
    n1="${n/host/host1}"
    s_="$(jnum "$work/$n.json" samples)"; s1_="$(jnum "$work/$n1.json" samples)"
    c_="$(jnum "$work/$n.json" cpu_ns)"; c1_="$(jnum "$work/$n1.json" cpu_ns)"
    k_="$(jnum "$work/$n.json" peak_rss_kib)"
    lo="$(sed -n 's/.*"losses": {\([^}]*\)}.*/\1/p' "$work/$n.json" | tr -d '"')"
    echo "| polystack --mode $m | $s_ | $(awk -v c="$c_" 'BEGIN {printf "%.2f s", c / 1e9}') | $(awk -v c="$c_" -v n="$s_" 'BEGIN {printf "%.1f ms", c / 1e6 * 1000 / n}') | $(awk -v a="$c_" -v b="$c1_" -v n="$((s_ - s1_))" 'BEGIN {if (n > 0) printf "%.1f ms", (a - b) / 1e6 * 1000 / n; else print "n/a"}') | $((k_ / 1024)) MiB | $(jnum "$work/$n.json" achieved_hz) | ${lo:-none} |"
  done
  if [ "$perf_ok" = 1 ]; then
    read -r pwall puser psys prss < <(tail -1 "$work/perf-host.time")
    echo "| perf record -F 99 --call-graph dwarf -p | $perf_host_samples | $(awk -v u="$puser" -v s="$psys" 'BEGIN {printf "%.2f s", u + s}') | $(awk -v u="$puser" -v s="$psys" -v n="$perf_host_samples" 'BEGIN {if (n > 0) printf "%.1f ms", (u + s) * 1e6 / n; else print "n/a"}') | | $((prss / 1024)) MiB | $(awk -v n="$perf_host_samples" -v t="$host_threads" -v s="$host_seconds" 'BEGIN {printf "%.3f", n / t / s}') | |"
    if [ -s "$work/perf-report.time" ]; then
      read -r rwall ruser rsys rrss < <(tail -1 "$work/perf-report.time")
      echo "| perf report --stdio (of that record) | | $(awk -v u="$ruser" -v s="$rsys" 'BEGIN {printf "%.2f s", u + s}') | $(awk -v u="$ruser" -v s="$rsys" -v n="$perf_host_samples" 'BEGIN {if (n > 0) printf "%.1f ms", (u + s) * 1e6 / n; else print "n/a"}') | | $((rrss / 1024)) MiB | | |"
    fi
  fi
} >"$work/table.md"

mkdir -p "$(dirname "$out")"
cp "$work/table.md" "$out"
cat "$work/table.md"
log "table written to $out"
