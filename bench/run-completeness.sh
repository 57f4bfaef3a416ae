#!/usr/bin/env bash
# Completeness of `polystack agent`: a LuaJIT program among a busy mix gets the same Lua function
# shares from the agent (whole host, 20 Hz per CPU, OTLP to a real Collector whose file exporter
# writes JSON) as from `polystack record --pid` (99 Hz) of that program alone, both at once on
# the same run of it. (A record of another run of the program, on an otherwise idle host, is no
# reference: among the mix its memory-bound functions take a larger share of its CPU time than
# alone, and the profiles differ by that, not by what the agent missed.)
#
#   mix     the LuaJIT program (three Lua functions of different weights, JIT-compiled and
#           calling into C, timing each with os.clock: the truth both are compared with), two
#           C spinners, and a short-lived process every 0.6 s
#   compare bench/lua_shares.py: shares by innermost Lua frame on each side, the largest
#           difference in points against the goal (3), and the samples behind each side
#
# Usage: bench/run-completeness.sh [SECONDS (default 60)]
# Exits 1 when the largest difference is over LUA_SHARES_POINTS (default 3).
set -euo pipefail
root="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)"
secs=${1:-60}
collector=$(ls "$root"/e2e/target/collector/*/polystack-otelcol 2>/dev/null | head -1)
[ -x "$collector" ] || { echo "run-completeness: build the test Collector first (./run-tests builds it)" >&2; exit 1; }
tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$tmp"; }
trap cleanup EXIT

port=$((20000 + RANDOM % 20000))
cat > "$tmp/col.yaml" <<YAML
receivers: {otlp: {protocols: {grpc: {endpoint: "127.0.0.1:$port"}}}}
exporters:
  file/profiles: {path: $tmp/profiles.json, format: json, flush_interval: 100ms}
service:
  telemetry: {metrics: {level: none}}
  pipelines:
    profiles: {receivers: [otlp], exporters: [file/profiles]}
YAML
"$collector" --config "$tmp/col.yaml" --feature-gates=service.profilesSupport > "$tmp/col.log" 2>&1 &
pids+=($!)
"$root/polystack" plugins > /dev/null # builds the distribution first

cat > "$tmp/shares.lua" <<'LUA'
local function fib(n) if n < 2 then return n end return fib(n - 1) + fib(n - 2) end
local function strings(n)
  local t = {}
  for i = 1, n do t[#t + 1] = tostring(i * 7) end
  return #table.concat(t, ",")
end
local function sum(n) local s = 0 for i = 1, n do s = s + i % 7 end return s end
local spent = {fib = 0, strings = 0, sum = 0}
local out = arg[1]
local last = os.time()
while true do
  local a = os.clock(); fib(25)
  local b = os.clock(); strings(30000)
  local c = os.clock(); sum(3000000)
  local d = os.clock()
  spent.fib = spent.fib + (b - a); spent.strings = spent.strings + (c - b); spent.sum = spent.sum + (d - c)
  if os.time() ~= last then
    last = os.time()
    local f = io.open(out, "w"); f:write(string.format("fib %.3f strings %.3f sum %.3f\n", spent.fib, spent.strings, spent.sum)); f:close()
  end
end
LUA
gcc -O2 -o "$tmp/spin" -x c - <<'C'
volatile unsigned long n; int main(void) { for (;;) n++; }
C

luajit "$tmp/shares.lua" "$tmp/truth" & lua=$!; pids+=($lua)
"$tmp/spin" & pids+=($!)
"$tmp/spin" & pids+=($!)
# timeout exits 124 when it stops the spinner: not an error here (set -e).
( while true; do timeout 0.3 "$tmp/spin" || true; sleep 0.3; done ) & pids+=($!)
"$root/polystack" agent --otlp-endpoint "http://127.0.0.1:$port" --export-interval 5s \
  --duration "$((secs + 10))s" --stats-json "$tmp/agent.json" > /dev/null 2> "$tmp/agent.err" &
agent=$!; pids+=($agent)
sleep 5 # the agent's start-up, so both cover the same seconds of the program
"$root/polystack" record --pid "$lua" -d "${secs}s" --format folded -o "$tmp/record.folded" \
  --stats-json "$tmp/record.json" > /dev/null 2> "$tmp/record.err" || true
wait "$agent" || { echo "run-completeness: the agent failed:" >&2; tail -5 "$tmp/agent.err" >&2; exit 1; }
for p in "${pids[@]:1}"; do kill "$p" 2>/dev/null || true; done
sleep 1 # the file exporter flushes every 100 ms
[ -s "$tmp/record.folded" ] || { echo "run-completeness: the record wrote nothing:" >&2; tail -5 "$tmp/record.err" >&2; exit 1; }

echo "agent: $(python3 -c "import json; d = json.load(open('$tmp/agent.json')); print('losses', d['losses'], 'capture', d['capture'])")"
echo "record: $(python3 -c "import json; d = json.load(open('$tmp/record.json')); print('losses', d['losses'], 'errors', d['errors'])")"
echo
rc=0
python3 "$root/bench/lua_shares.py" "$tmp/profiles.json" "$lua" "$tmp/record.folded" || rc=$?
awk '{ t = $2 + $4 + $6; printf "the program'"'"'s own CPU time per function (os.clock) over its whole run: fib %.1f%%, strings %.1f%%, sum %.1f%%\n", 100 * $2 / t, 100 * $4 / t, 100 * $6 / t }' "$tmp/truth" 
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) CPUs"
exit $rc
