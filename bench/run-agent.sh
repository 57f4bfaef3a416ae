#!/usr/bin/env bash
# Host cost of `polystack agent`, measured in one run, phase after phase, next to the anchor (the
# OpenTelemetry eBPF profiler, built by bench/build-anchor.sh) in the same phases, one agent
# after the other, each a fresh process measured for SECONDS after a 15 s warm-up:
#
#   floor  polystack agent with a selection that matches nothing (--comm nosuchprogram): what
#          it costs doing nothing, whatever else the host runs;
#   idle   the agent alone, whole host, 20 Hz per CPU: its CPU (user+sys, from /proc/PID/stat)
#          per second after start-up, and its RSS; "idle, steady" is the same process measured
#          again from 180 s after its start, when start-up work (the first look at every
#          process, JIT compilation) is over: what an always-on agent costs an idle host;
#   mix    both CPUs kept busy by the issue's mix: a LuaJIT program, nginx with
#          lua-nginx-module (2 workers, OpenResty's luajit2) under wrk (1 thread, 4
#          connections), a C program, and short-lived processes (a new one every 0.6 s, each
#          ~0.3 s of CPU: 100 a minute); at 20 Hz and at 99 Hz per CPU;
# (`record --pid` of a sleeping process, the fixed cost of a record: bench/run-fixed-cost.sh.)
#
# Both export to a real Collector (e2e/collector, built by ./run-tests) on loopback. The anchor
# needs tracefs, which this script mounts at /sys/kernel/tracing when it is not there; without
# e2e/target/anchor/ebpf-profiler its rows are left out.
#   long   polystack alone at 20 Hz under the mix for the whole window, its RSS each minute
#          (`bench/run-agent.sh 600 long`: the issue's ten minutes).
# Usage: bench/run-agent.sh [SECONDS_PER_PHASE (default 60)] [PHASES (default "floor idle mix")]
# Prints a markdown table; compare figures within one run (the machine's load moves them).
set -euo pipefail
root="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)"
secs=${1:-60}
phases=${2:-floor idle mix}
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
  if [ -n "${per_minute:-}" ]; then # the RSS at the end of each minute of the window
    local m=0
    while [ $((m * 60)) -lt "$secs" ]; do
      sleep 60; m=$((m + 1)); printf '%.0f ' "$(rss_of "$pid")" >> "$tmp/minutes.txt"
    done
  else
    sleep "$secs"
  fi
  c1=$(cpu_of "$pid"); t1=$(date +%s.%N)
  local rss hwm
  rss=$(rss_of "$pid"); hwm=$(hwm_of "$pid")
  row "$phase" "$rate" "$who" "$c0" "$c1" "$t0" "$t1" "$rss" "$hwm" "$l0"
  if [ -n "${steady:-}" ]; then
    sleep $((steady > 15 + secs ? steady - 15 - secs : 0))
    c0=$(cpu_of "$pid"); t0=$(date +%s.%N); l0=$(cut -d' ' -f1 /proc/loadavg)
    sleep "$secs"
    c1=$(cpu_of "$pid"); t1=$(date +%s.%N)
    rss=$(rss_of "$pid"); hwm=$(hwm_of "$pid")
    row "$phase, steady" "$rate" "$who" "$c0" "$c1" "$t0" "$t1" "$rss" "$hwm" "$l0"
  fi
  kill -TERM "$pid"; wait "$pid" || true
  local samples="-"
  if [ "${who%% *}" = polystack ] && [ -s "$tmp/$phase.$rate.json" ]; then
    samples=$(python3 -c "import json,sys; print(json.load(open('$tmp/$phase.$rate.json'))['samples'])")
  fi
  echo "  samples over the whole run of the $phase phase ($who, $rate Hz): $samples" >> "$tmp/samples.txt"
}

# One table row: CPU over [t0, t1] from the two CPU readings, RSS and peak RSS at t1.
row() {
  awk -v p="$1" -v r="$2" -v w="$3" -v c0="$4" -v c1="$5" -v t0="$6" -v t1="$7" \
      -v rss="$8" -v hwm="$9" -v l0="${10}" -v l1="$(cut -d' ' -f1 /proc/loadavg)" \
      'BEGIN { d = t1 - t0;
      printf "| %s | %s | %d Hz | %.1f ms/s (%.2f%% of a core) | %.0f MiB | %.0f MiB | %s-%s |\n",
      p, w, r, 1000 * (c1 - c0) / d, 100 * (c1 - c0) / d, rss, hwm, l0, l1 }'
}

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

echo "| phase | agent | rate per CPU | agent CPU | RSS at end | peak RSS | load average (1 min) |"
echo "|---|---|---|---|---|---|---|"
has() { [[ " $phases " == *" $1 "* ]]; }
if has floor; then agent floor 20 --comm nosuchprogram; fi
if has idle; then steady=180 agent idle 20; steady=180 anchor idle 20; fi
has mix || has long || exit 0

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
# timeout exits 124 when it stops the spinner: not an error here (set -e).
( while true; do timeout 0.3 "$tmp/spin" || true; sleep 0.3; done ) & pids+=($!)

# nginx + lua-nginx-module as NginxLuaTest runs it: OpenResty's luajit2 unpacked by ./run-tests.
ngx_lua=/opt/polystack-ci/nginx-lua
[ -f "$ngx_lua/.complete" ] ||
  { echo "run-agent: $ngx_lua is missing: run ./run-tests once as root, it unpacks it" >&2; exit 1; }
mkdir -p "$tmp/ngx/tmp"
chmod a+rx "$tmp" # nginx workers run as nobody and read handler.lua
cp "$root/e2e/src/test/resources/luajit-targets/handler.lua" "$tmp/ngx/"
ngx_port=$((port + 1))
cat > "$tmp/ngx/nginx.conf" <<NGX
load_module /usr/lib/nginx/modules/ndk_http_module.so;
load_module $ngx_lua/usr/lib/nginx/modules/ngx_http_lua_module.so;
daemon off;
master_process on;
worker_processes 2;
pid $tmp/ngx/nginx.pid;
error_log $tmp/ngx/error.log warn;
events { worker_connections 256; }
http {
  access_log off;
  client_body_temp_path $tmp/ngx/tmp; proxy_temp_path $tmp/ngx/tmp; fastcgi_temp_path $tmp/ngx/tmp;
  uwsgi_temp_path $tmp/ngx/tmp; scgi_temp_path $tmp/ngx/tmp;
  lua_package_path "$tmp/ngx/?.lua;$ngx_lua/usr/share/lua/5.1/?.lua;;";
  server {
    listen 127.0.0.1:$ngx_port;
    location / { content_by_lua_block { require("handler").handle() } }
  }
}
NGX
LD_LIBRARY_PATH="$ngx_lua/usr/lib/x86_64-linux-gnu" nginx -p "$tmp/ngx" -c "$tmp/ngx/nginx.conf" \
  2> "$tmp/ngx/stderr" & pids+=($!)
for _ in $(seq 50); do curl -sf "http://127.0.0.1:$ngx_port/" > /dev/null 2>&1 && break; sleep 0.2; done
curl -sf "http://127.0.0.1:$ngx_port/" > /dev/null ||
  { echo "run-agent: nginx did not answer: $(cat "$tmp/ngx/stderr" "$tmp/ngx/error.log" 2>/dev/null | tail -3)" >&2; exit 1; }
wrk -t1 -c4 -d1000000s "http://127.0.0.1:$ngx_port/" > /dev/null 2>&1 & pids+=($!)

if has long; then
  per_minute=1 agent mix 20
  echo; echo "RSS at the end of each minute (MiB): $(cat "$tmp/minutes.txt")"
fi
if has mix; then
  agent mix 20
  anchor mix 20
  agent mix 99
  anchor mix 99
fi
for p in "${pids[@]:1}"; do kill "$p" 2>/dev/null || true; done
echo
cat "$tmp/samples.txt"
echo; echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) CPUs"
echo "record --pid of a sleeping process: bench/run-fixed-cost.sh"
