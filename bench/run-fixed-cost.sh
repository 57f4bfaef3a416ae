#!/usr/bin/env bash
# Where the fixed cost of polystack goes when it has nothing to sample, thread by thread:
#
#   record  `polystack record --pid` of a sleeping process;
#   floor   `polystack agent --comm nosuchprogram` (a selection that matches nothing), exporting
#           to a real Collector (e2e/collector, built by ./run-tests) on loopback.
#
# Each runs 15 s to warm up, then its CPU (user+sys from /proc/PID/task/*/stat, by thread name)
# is taken over SECONDS. POLYSTACK_JAVA_OPTS is passed through, so one run can compare JVM
# options: e.g. POLYSTACK_JAVA_OPTS=-XX:+UsePerfData bench/run-fixed-cost.sh 60
# Usage: bench/run-fixed-cost.sh [SECONDS] (default 60). Figures: docs/benchmarks.md,
# "The agent and record's fixed cost".
set -euo pipefail
root="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)"
secs=${1:-60}
collector=$(ls "$root"/e2e/target/collector/*/polystack-otelcol 2>/dev/null | head -1)
[ -x "$collector" ] || { echo "run-fixed-cost: build the test Collector first (./run-tests builds it)" >&2; exit 1; }
tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$tmp"; }
trap cleanup EXIT
"$root/polystack" plugins > /dev/null # builds the distribution first, outside the figures

ticks=$(getconf CLK_TCK)
# CPU ticks of each thread of $1, summed by thread name.
threads() {
  for t in /proc/"$1"/task/*; do
    awk -v n="$(cat "$t/comm" 2>/dev/null)" '{ split($0, a, ") "); split(a[2], f, " ");
      print n "\t" f[12] + f[13] }' "$t/stat" 2>/dev/null || true
  done | awk -F'\t' '{ s[$1] += $2 } END { for (k in s) print k "\t" s[k] }' | sort
}
total() { awk '{ split($0, a, ") "); split(a[2], f, " "); print f[12] + f[13] }' "/proc/$1/stat"; }

# The JVM's pid once the launcher has exec'd into it.
jvm_of() {
  local pid=$1
  for _ in $(seq 100); do
    [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = java ] && { echo "$pid"; return; }
    sleep 0.1
  done
  echo "run-fixed-cost: polystack did not start" >&2; exit 1
}

measure() {
  local what=$1 pid=$2
  sleep 15
  threads "$pid" > "$tmp/a"; local t0; t0=$(total "$pid")
  sleep "$secs"
  threads "$pid" > "$tmp/b"; local t1; t1=$(total "$pid")
  awk -v w="$what" -v t0="$t0" -v t1="$t1" -v s="$secs" -v hz="$ticks" -v load="$(cut -d' ' -f1-3 /proc/loadavg)" \
    -v rss="$(awk '/VmRSS/ { print $2 / 1024 }' "/proc/$pid/status")" 'BEGIN {
    printf "%s: %.1f ms of CPU per second over %d s (load average %s), RSS %.0f MiB\n",
      w, 1000 * (t1 - t0) / hz / s, s, load, rss }'
  join -t$'\t' "$tmp/a" "$tmp/b" | awk -F'\t' -v hz="$ticks" -v s="$secs" \
    '$3 > $2 { printf "  %-18s %5.2f ms/s\n", $1, 1000 * ($3 - $2) / hz / s }'
}

sleep 100000 & sleeper=$!; pids+=("$sleeper")
"$root/polystack" record --pid "$sleeper" -d "$((secs + 30))s" -o "$tmp/r.pprof" \
  > "$tmp/record.log" 2>&1 & pids+=($!)
measure "record --pid (sleeping process)" "$(jvm_of $!)"
kill -INT "${pids[-1]}" 2>/dev/null || true

port=$((20000 + RANDOM % 20000))
cat > "$tmp/col.yaml" <<YAML
receivers: {otlp: {protocols: {grpc: {endpoint: 127.0.0.1:$port}}}}
exporters: {debug: {verbosity: basic}}
service:
  telemetry: {metrics: {level: none}}
  pipelines:
    profiles: {receivers: [otlp], exporters: [debug]}
    metrics: {receivers: [otlp], exporters: [debug]}
YAML
"$collector" --config "$tmp/col.yaml" --feature-gates=service.profilesSupport > "$tmp/col.log" 2>&1 &
pids+=($!)
"$root/polystack" agent --comm nosuchprogram --otlp-endpoint "http://127.0.0.1:$port" \
  > "$tmp/agent.log" 2>&1 & pids+=($!)
measure "agent --comm nosuchprogram (floor)" "$(jvm_of $!)"
echo "POLYSTACK_JAVA_OPTS: ${POLYSTACK_JAVA_OPTS:-(none)}; $(nproc) CPUs"
