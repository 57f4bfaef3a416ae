# Shell functions shared by the bench/run-*.sh scripts; sourced, not run.
#
# The sourcing script sets, before it sources this file:
#   bench_name   the prefix of its messages (e.g. run-vdso)
#   root         the repository root
# and, before it calls quiet or paired_rounds: wait_quiet (1: wait for a quiet machine),
# wait_budget (seconds it may wait in all), rounds and configs (an array).

# The options run-sampling.sh and run-vdso.sh share, with their defaults (see common_option).
mode=full
rounds=""
out=""
keep=0
wait_quiet=1
nice_level=""
halt_poll=""

# Takes one of the shared options (--quick, --full, --rounds N, --out FILE, --keep, --no-wait,
# --nice N, --halt-poll NS, -h/--help) from the front of the arguments; sets consumed to the number of words it
# took, 0 when the first is not one of them.
common_option() { # args...
  consumed=1
  case "$1" in
    --quick) mode=quick ;;
    --full) mode=full ;;
    --rounds) rounds="$2"; consumed=2 ;;
    --out) out="$2"; consumed=2 ;;
    --keep) keep=1 ;;
    --no-wait) wait_quiet=0 ;;
    --nice) nice_level="$2"; consumed=2 ;;
    --halt-poll) halt_poll="$2"; consumed=2 ;;
    -h|--help) usage "$0"; exit 0 ;;
    *) consumed=0 ;;
  esac
}

log() { echo "$bench_name: $*" >&2; }
die() { echo "$bench_name: $*" >&2; exit 1; }

# Prints the script's header comment (from line 2 to the first line that is not a comment):
# its --help.
usage() { # script
  awk 'NR > 1 && /^#/ {sub(/^# ?/, ""); print; next} NR > 1 {exit}' "$1"
}

# Fails unless every named tool is on the PATH.
require_tools() { # tool...
  local tool
  for tool in "$@"; do
    command -v "$tool" >/dev/null 2>&1 || die "$tool not found"
  done
}

# A scratch directory in $work, removed on exit unless keep=1 (then its path is logged). The
# EXIT trap also restores what the script changed on the machine (halt polling, BPF run
# statistics); Ctrl-C and SIGTERM go through it too.
make_work() { # mktemp-template
  work="$(mktemp -d "$1")"
  trap cleanup_work EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
}
cleanup_work() {
  restore_halt_poll
  restore_bpf_stats
  if [ "${keep:-0}" = 1 ]; then log "scratch kept in $work"; else rm -rf "$work"; fi
}

# The guest kernel's halt polling (cpuidle driver haltpoll): how long an idle vCPU polls before
# it halts. With 0, every stop of a ptrace tracee or tracer halts a vCPU that the hypervisor then
# has to wake; this, more than the tracer's own work, sets what a stop costs on such a VM (see
# docs/benchmarks.md). --halt-poll NS sets it for the run (root) and restores it on exit.
halt_poll_param=/sys/module/haltpoll/parameters/guest_halt_poll_ns
halt_poll_saved=""
apply_halt_poll() {
  [ -n "$halt_poll" ] || return 0
  [[ "$halt_poll" =~ ^[0-9]+$ ]] || die "--halt-poll takes nanoseconds, e.g. 200000"
  [ -w "$halt_poll_param" ] || die "--halt-poll needs root and the haltpoll cpuidle driver ($halt_poll_param is not writable)"
  halt_poll_saved="$(cat "$halt_poll_param")"
  echo "$halt_poll" >"$halt_poll_param"
  log "guest halt polling set to $halt_poll ns for this run (was $halt_poll_saved)"
}
restore_halt_poll() {
  if [ -n "$halt_poll_saved" ]; then
    echo "$halt_poll_saved" >"$halt_poll_param" 2>/dev/null || log "could not restore $halt_poll_param to $halt_poll_saved"
    halt_poll_saved=""
  fi
}
# "guest halt polling N ns" (or why it is unknown), for the machine line of a result.
halt_poll_info() {
  if [ -r "$halt_poll_param" ]; then
    echo "guest halt polling $(cat "$halt_poll_param") ns ($(cat /sys/devices/system/cpu/cpuidle/current_driver 2>/dev/null || echo '?') cpuidle driver)"
  else
    echo "no haltpoll cpuidle driver"
  fi
}

# The kernel's BPF run statistics (bpf_prog_info run_time_ns and run_cnt: the in-kernel cost of
# a program per run). Off by default because they cost a little on every run of every program;
# enable_bpf_stats turns them on (root) and the EXIT trap of make_work restores the setting.
bpf_stats_param=/proc/sys/kernel/bpf_stats_enabled
bpf_stats_saved=""
enable_bpf_stats() {
  [ -w "$bpf_stats_param" ] || die "BPF run statistics need root ($bpf_stats_param is not writable)"
  [ -n "$bpf_stats_saved" ] || bpf_stats_saved="$(cat "$bpf_stats_param")"
  echo 1 >"$bpf_stats_param"
}
restore_bpf_stats() {
  if [ -n "$bpf_stats_saved" ]; then
    echo "$bpf_stats_saved" >"$bpf_stats_param" 2>/dev/null || log "could not restore $bpf_stats_param to $bpf_stats_saved"
    bpf_stats_saved=""
  fi
}

# Builds the distribution through the launcher (first use or sources changed) before anything
# is timed; sets ps to the command that runs it.
build_polystack() {
  log "building polystack (first use or sources changed)"
  "$root/polystack" --help >/dev/null
  ps=("$root/polystack")
}

# "N vCPUs, Linux RELEASE, CPU MODEL": the machine the figures come from.
machine_info() {
  echo "$(nproc) vCPUs, Linux $(uname -r), $(lscpu | sed -n 's/^Model name: *//p' | head -1)"
}

# Share of all CPUs busy over one second, from /proc/stat.
cpu_busy() {
  local a b
  a=($(head -1 /proc/stat)); sleep 1; b=($(head -1 /proc/stat))
  awk -v u="$((b[1] + b[2] + b[3] + b[6] + b[7] + b[8] - a[1] - a[2] - a[3] - a[6] - a[7] - a[8]))" \
      -v i="$((b[4] + b[5] - a[4] - a[5]))" 'BEGIN {t = u + i; printf "%d", (t > 0 ? 100 * u / t : 0)}'
}
waited=0
# Waits (within wait_budget seconds in all) until other work leaves the machine nearly idle;
# sets busy (%); waited counts the seconds spent waiting.
busy=0
quiet() {
  busy="$(cpu_busy)"
  while [ "$wait_quiet" = 1 ] && [ "$busy" -ge 25 ] && [ "$waited" -lt "$wait_budget" ]; do
    waited=$((waited + 1))
    busy="$(cpu_busy)"
  done
}

# Paired, interleaved rounds: each of $rounds rounds runs every configuration in $configs once,
# rotated so that a different one goes first each time, after waiting for a quiet machine (the
# busy share before each round goes to busy_rounds). RECORD CONFIG ROUND runs one
# configuration, stores its result and sets `shown` to what the round's log line shows for it.
paired_rounds() { # record-function
  local record="$1" r k c line count=${#configs[@]}
  busy_rounds=()
  for ((r = 1; r <= rounds; r++)); do
    quiet
    busy_rounds+=("$busy")
    line=""
    for ((k = 0; k < count; k++)); do
      c=${configs[$(((k + r - 1) % count))]}
      "$record" "$c" "$r"
      line+=" $c=$shown"
    done
    log "round $r/$rounds (other CPU use before: $busy%):$line (load $(cut -d' ' -f1 /proc/loadavg))"
  done
}

# Median of the numbers on stdin, one a line ("nan" when there are none).
median() { sort -g | awk '{v[NR] = $1} END {if (NR == 0) print "nan"; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
# Nanoseconds as microseconds with one decimal.
us() { awk -v v="$1" 'BEGIN {printf "%.1f", v / 1000}'; }
# a / b with two decimals, or n/a.
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (b > 0) printf "%.2f", a / b; else print "n/a"}'; }
