#!/usr/bin/env bash
# Soak of `polystack agent`: whole host at 20 Hz per CPU for MINUTES (default 30) while a
# churn loop starts and ends about 10 processes a second (each a few ms of CPU) and one busy
# LuaJIT program runs. Every 10 s it notes the agent's RSS; at the end it prints the RSS over
# time, the growth over the last two thirds, the intervals exported against those due, and the
# agent's losses (its --stats-json).
# Usage: bench/soak-agent.sh [MINUTES]
set -euo pipefail
root="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)"
minutes=${1:-30}
collector=$(ls "$root"/e2e/target/collector/*/polystack-otelcol 2>/dev/null | head -1)
[ -x "$collector" ] || { echo "soak-agent: build the test Collector first (./run-tests builds it)" >&2; exit 1; }
tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$tmp"; }
trap cleanup EXIT
port=$((20000 + RANDOM % 20000))
cat > "$tmp/col.yaml" <<YAML
receivers: {otlp: {protocols: {grpc: {endpoint: "127.0.0.1:$port"}}}}
exporters: {debug: {verbosity: basic}}
service:
  telemetry: {metrics: {level: none}}
  pipelines:
    profiles: {receivers: [otlp], exporters: [debug]}
    metrics: {receivers: [otlp], exporters: [debug]}
YAML
"$collector" --config "$tmp/col.yaml" --feature-gates=service.profilesSupport > "$tmp/col.log" 2>&1 &
pids+=($!)
"$root/polystack" plugins > /dev/null
gcc -O2 -o "$tmp/brief" -x c - <<'C'
volatile unsigned long n; int main(void) { for (unsigned long i = 0; i < 3000000; i++) n += i; return 0; }
C
cat > "$tmp/busy.lua" <<'LUA'
local function leaf(n) local s = 0 for i = 1, n do s = s + i % 7 end return s end
while true do leaf(100000) end
LUA
luajit "$tmp/busy.lua" & pids+=($!)
( while true; do for i in 1 2 3 4 5 6 7 8 9 10; do "$tmp/brief" & done; wait; sleep 0.9; done ) &
pids+=($!)
interval=10
"$root/polystack" agent --otlp-endpoint "http://127.0.0.1:$port" --export-interval "${interval}s" \
  --stats-json "$tmp/stats.json" 2> "$tmp/agent.err" &
agent=$!
pids+=($agent)
sleep 5
jvm=$agent
echo "| minute | RSS (MiB) |"
echo "|---|---|"
start=$(date +%s)
rss=()
while [ $(( $(date +%s) - start )) -lt $((minutes * 60)) ]; do
  sleep 10
  if ! kill -0 "$agent" 2>/dev/null; then
    status=0; wait "$agent" || status=$?
    echo "soak-agent: the agent ended after $(( $(date +%s) - start )) s (exit $status); its stderr:" >&2
    tail -20 "$tmp/agent.err" >&2
    exit 1
  fi
  r=$(awk '/VmRSS/ { printf "%.0f", $2 / 1024 }' "/proc/$jvm/status")
  rss+=("$r")
  if [ $(( ${#rss[@]} % 6 )) -eq 0 ]; then echo "| $(( ${#rss[@]} / 6 )) | $r |"; fi
done
gc=""
if command -v jstat > /dev/null; then
  # The launcher runs the JVM with -XX:-UsePerfData, which jstat needs: then there is no line.
  gc=$( (jstat -gc "$jvm" 2>/dev/null || true) | awk 'NR == 2 { for (i = 1; i <= NF; i++) v[h[i]] = $i; printf "young collections %d (%.1f s), full %d (%.1f s); old generation %.0f of %.0f MiB used", v["YGC"], v["YGCT"], v["FGC"], v["FGCT"], v["OU"] / 1024, v["OC"] / 1024 } NR == 1 { for (i = 1; i <= NF; i++) h[i] = $i }')
fi
kill -TERM "$agent"; wait "$agent" || true
[ -s "$tmp/stats.json" ] || { echo "soak-agent: the agent wrote no --stats-json; its stderr:" >&2; tail -20 "$tmp/agent.err" >&2; exit 1; }
n=${#rss[@]}
third=$((n / 3))
python3 - "$tmp/stats.json" "$minutes" "$interval" "${rss[@]}" <<'PY'
import json, sys
stats = json.load(open(sys.argv[1])); minutes = int(sys.argv[2]); interval = int(sys.argv[3])
rss = [int(x) for x in sys.argv[4:]]
tail = rss[len(rss) // 3:]
print(f"\nRSS after warm-up (first third left out): min {min(tail)} MiB, max {max(tail)} MiB,"
      f" growth from the start of the last two thirds to the end: "
      f"{100 * (tail[-1] - tail[0]) / tail[0]:+.1f}%")
e = stats["export"]
print(f"intervals due about {minutes * 60 // interval}; requests accepted {e['requests']},"
      f" failed {e['requests_failed']}; samples {stats['samples']}, sent {e['samples_sent']},"
      f" dropped {e['samples_dropped']}")
print(f"processes seen {stats['processes_seen']}, tracked at the end {stats['processes_tracked']}")
print("losses:", stats["losses"]); print("capture:", stats["capture"])
print(f"agent CPU {stats['cpu_seconds']:.1f} s over {stats['seconds']:.0f} s")
PY
[ -z "$gc" ] || echo "agent's garbage collection over the run: $gc"
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) CPUs"
