#!/usr/bin/env bash
# Host cost of `polystack agent`, measured in one run, phase after phase, next to the anchor (the
# OpenTelemetry eBPF profiler, built by bench/build-anchor.sh) in the same phases, one agent
# after the other, each a fresh process measured for SECONDS after a 15 s warm-up:
#
#   floor  polystack agent with a selection that matches nothing (--comm nosuchprogram): what
#          it costs doing nothing, whatever else the host runs;
#   idle   the agent alone, whole host, 20 Hz per CPU: its CPU (user+sys, from /proc/PID/stat)
#          per second after start-up, and its RSS;
#   mix    both CPUs kept busy by a mix: a LuaJIT program, two C programs, and short-lived
#          processes (a new one every 0.6 s, each ~0.3 s of CPU); at 20 Hz and at 99 Hz per CPU;
#   record `polystack record --pid` of a sleeping process for 5 s and for 25 s: the slope is the
#          fixed cost per second of a record that gets no sample.
#
# Both export to a real Collector (e2e/collector, built by ./run-tests) on loopback. The anchor
# needs tracefs, which this script mounts at /sys/kernel/tracing when it is not there; without
# e2e/target/anchor/ebpf-profiler its rows are left out.
# Usage: bench/run-agent.sh [SECONDS_PER_PHASE (default 60)]
# Prints a markdown table; compare figures within one run (the machine's load moves them).
set -euo pipefail
root="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)"
secs=${1:-60}
collector=$(ls "$root"/e2e/target/collector/*/polystack-otelcol 2>/dev/null | head -1)
[ -x "$collector" ] || { echo "run-agent: build the test Collector first (./run-tests builds it)" >&2; exit 1; }
tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; pkill -P $$ 2>/dev/null || true; rm -rf "$tmp"; }
trap cleanup EXIT

port=$((20000 + RANDOM % 20000))
cat > "$tmp/col.yaml" <<YAML
receivers:
  otlp:
    protocols:
      grpc:
        endpoint: 127.0.0.1:$port
exporters:
  debug:
    verbosity: basic
service:
  telemetry:
    metrics:
      level: none
  pipelines:
    profiles: {receivers: [otlp], exporters: [debug]}
    metrics: {receivers: [otlp], exporters: [debug]}
YAML
"$collector" --config "$tmp/col.yaml" --feature-gates=service.profilesSupport > "$tmp/col.log" 2>&1 &
pids+=($!)
"$root/polystack" plugins > /dev/null # builds the distribution first, outside the figures

ticks=$(getconf CLK_TCK)
cpu_of() { awk -v t="$ticks" '{ split($0, a, ") "); split(a[2], f, " "); print (f[12] + f[13]) / t }' "/proc/$1/stat"; }
rss_of() { awk '/VmRSS/ { print $2 / 1024 }' "/proc/$1/status"; }
hwm_of() { awk '/VmHWM/ { print $2 / 1024 }' "/proc/$1/status"; }

# measure PID PHASE RATE WHO: the CPU of PID over $secs after a 15 s warm-up; prints a row.
measure() {
  local pid=$1 phase=$2 rate=$3 who=$4
  sleep 15
  if ! kill -0 "$pid" 2>/dev/null; then
    echo "| $phase | $who | $rate Hz | exited during warm-up: $(tail -1 "$tmp"/*"$phase.$rate"*.{err,log} 2>/dev/null | tail -1) | | | | |"
    return 0
  fi
  local c0 t0 c1 t1 l0
  c0=$(cpu_of "$pid"); t0=$(date +%s.%N); l0=$(cut -d' ' -f1 /proc/loadavg)
  sleep "$secs"
  c1=$(cpu_of "$pid"); t1=$(date +%s.%N)
  local rss hwm
  rss=$(rss_of "$pid"); hwm=$(hwm_of "$pid")
  kill -TERM "$pid"; wait "$pid" || true
  local samples="-"
  if [ "${who%% *}" = polystack ] && [ -s "$tmp/$phase.$rate.json" ]; then
    samples=$(python3 -c "import json,sys; print(json.load(open('$tmp/$phase.$rate.json'))['samples'])")
  fi
  awk -v p="$phase" -v r="$rate" -v w="$who" -v c0="$c0" -v c1="$c1" -v t0="$t0" -v t1="$t1" \
      -v rss="$rss" -v hwm="$hwm" -v s="$samples" -v l0="$l0" -v l1="$(cut -d' ' -f1 /proc/loadavg)" \
      'BEGIN { d = t1 - t0;
      printf "| %s | %s | %d Hz | %.1f ms/s (%.2f%% of a core) | %.0f MiB | %.0f MiB | %s | %s-%s |\n",
      p, w, r, 1000 * (c1 - c0) / d, 100 * (c1 - c0) / d, rss, hwm, s, l0, l1 }'
}

# agent PHASE RATE [SELECTION...]: polystack's agent (the launcher execs java: same pid)
agent() {
  local phase=$1 rate=$2
  shift 2
  "$root/polystack" agent --rate "$rate" --otlp-endpoint "http://127.0.0.1:$port" \
    --stats-json "$tmp/$phase.$rate.json" "$@" > /dev/null 2> "$tmp/$phase.$rate.err" &
  local pid=$!
  pids+=($pid)
  measure "$pid" "$phase" "$rate" "polystack${1:+ $*}"
}

# anchor PHASE RATE: the OpenTelemetry eBPF profiler, OTLP to the same Collector
anchor() {
  [ -x "$anchor_bin" ] || return 0
  "$anchor_bin" -collection-agent "127.0.0.1:$port" -disable-tls -samples-per-second "$2" \
    > "$tmp/anchor.$1.$2.log" 2>&1 &
  local pid=$!
  pids+=($pid)
  measure "$pid" "$1" "$2" "anchor $(cat "$root/e2e/target/anchor/VERSION" 2>/dev/null)"
}

anchor_bin="$root/e2e/target/anchor/ebpf-profiler"
if [ -x "$anchor_bin" ] && [ ! -e /sys/kernel/tracing/trace_pipe ]; then
  mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null ||
    { echo "run-agent: tracefs is not mounted and could not be (the anchor needs it): its rows are left out" >&2; anchor_bin=""; }
fi

echo "| phase | agent | rate per CPU | agent CPU | RSS at end | peak RSS | samples (whole run) | load average (1 min) |"
echo "|---|---|---|---|---|---|---|---|"
agent floor 20 --comm nosuchprogram
agent idle 20
anchor idle 20

cat > "$tmp/busy.lua" <<'LUA'
local function leaf(n) local s = 0 for i = 1, n do s = s + i % 7 end return s end
local function mid(n) return leaf(n) + leaf(n / 2) end
while true do mid(100000) end
LUA
gcc -O2 -o "$tmp/spin" -x c - <<'C'
volatile unsigned long n; int main(void) { for (;;) n++; }
C
luajit "$tmp/busy.lua" & pids+=($!)
"$tmp/spin" & pids+=($!)
"$tmp/spin" & pids+=($!)
( while true; do timeout 0.3 "$tmp/spin"; sleep 0.3; done ) & pids+=($!)
agent mix 20
anchor mix 20
agent mix 99
anchor mix 99
for p in "${pids[@]:1}"; do kill "$p" 2>/dev/null || true; done

sleep 1000 & sleeper=$!; pids+=($sleeper)
for d in 5 25; do
  /usr/bin/time -f "%U %S %e" -o "$tmp/rec$d" "$root/polystack" record --pid "$sleeper" -d "${d}s" \
    -o "$tmp/r$d.html" > /dev/null 2>&1 || true
done
read -r u5 s5 e5 < "$tmp/rec5"; read -r u25 s25 e25 < "$tmp/rec25"
awk -v a="$u5" -v b="$s5" -v c="$u25" -v d="$s25" -v e5="$e5" -v e25="$e25" 'BEGIN {
  printf "\nrecord --pid of a sleeping process: %.2f s of CPU over %.1f s, %.2f s over %.1f s: %.1f ms of CPU per second (slope)\n",
  a + b, e5, c + d, e25, 1000 * ((c + d) - (a + b)) / (e25 - e5) }'
echo; echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) CPUs"
