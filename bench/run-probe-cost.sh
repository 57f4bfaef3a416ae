#!/usr/bin/env bash
# Per-hit cost of a counting probe (docs/benchmarks.md, "Probe monitors"): bench/probe-calls.c
# calls a small function for SECONDS of its thread's CPU time and prints its calls per second,
# alone (none), under bench/probe-count-minimal (a minimal libbpf program bumping one per-CPU
# counter, on a uprobe_multi link: min-multi, or a uprobe session link returning 1, as
# polystack's: min-session), under `polystack probe --monitor count` and `--monitor latency`,
# `--monitor count --hw` and `--monitor latency --hw` (the same monitors on execution
# breakpoints: polystack-count-hw, polystack-latency-hw, an entry and a ret breakpoint),
# `--monitor args` on probe_counted%return (args), the same exporting each call as a span to a
# real Collector on loopback (spans; e2e/collector, built by ./run-tests; left out when not
# built), and under bpftrace's one-liner `uprobe:BIN:probe_counted { @ = count(); }` when bpftrace
# installs and runs (Debian's package is installed here if missing; never in CI), in ROUNDS
# interleaved rounds of one run. Every probed run's own count is checked against the calls the
# program made. Prints each run (spans: also the spans made and dropped), the medians, the ns
# per hit over `none`, the ratios to min-session, and the load average.
#
# Usage: bench/run-probe-cost.sh [ROUNDS] [SECONDS]   (default 3 rounds of 2 s; root)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
rounds=${1:-3}
seconds=${2:-2}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
gcc -O2 -o "$work/probe-calls" "$root/bench/probe-calls.c"
clang -O2 -g -target bpf -I/usr/include/x86_64-linux-gnu \
  -c "$root/bench/probe-count-minimal.bpf.c" -o "$work/min.bpf.o"
gcc -O2 -o "$work/min" "$root/bench/probe-count-minimal.c" -lbpf
bin="$work/probe-calls"
# The symbol's file offset through the PT_LOAD that holds it, as polystack computes it.
vaddr=$((16#$(nm "$bin" | awk '$3 == "probe_counted" {print $1}')))
offset=""
while read -r type off addr phys filesz rest; do
  if [ "$type" = LOAD ] && [ "$vaddr" -ge $((addr)) ] && [ "$vaddr" -lt $((addr + filesz)) ]; then
    offset=$(printf '0x%x' $((vaddr - addr + off)))
  fi
done < <(readelf -lW "$bin")
[ -n "$offset" ] || { echo "run-probe-cost: no file offset for probe_counted" >&2; exit 1; }
"$root/polystack" --version >/dev/null 2>&1 # builds the distribution once, outside the runs
configs=(none min-multi min-session polystack polystack-count-hw polystack-latency
  polystack-latency-hw polystack-args)
collector=$(ls "$root"/e2e/target/collector/*/polystack-otelcol 2>/dev/null | head -1 || true)
if [ -x "$collector" ]; then
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  printf 'receivers:\n  otlp:\n    protocols:\n      grpc:\n        endpoint: 127.0.0.1:%s\n' "$port" >"$work/col.yaml"
  printf 'exporters:\n  debug:\n    verbosity: basic\n' >>"$work/col.yaml"
  printf 'service:\n  telemetry:\n    metrics:\n      level: none\n  pipelines:\n' >>"$work/col.yaml"
  printf '    %s:\n      receivers: [otlp]\n      exporters: [debug]\n' traces metrics >>"$work/col.yaml"
  "$collector" --config "$work/col.yaml" >"$work/col.log" 2>&1 &
  collector_pid=$!
  trap 'kill "$collector_pid" 2>/dev/null; wait "$collector_pid" 2>/dev/null; rm -rf "$work"' EXIT
  for i in $(seq 300); do grep -q "Everything is ready" "$work/col.log" && break; sleep 0.1; done
  grep -q "Everything is ready" "$work/col.log" || { echo "run-probe-cost: the Collector did not start: $(cat "$work/col.log")" >&2; exit 1; }
  configs+=(polystack-spans)
else
  echo "run-probe-cost: no test Collector built (./run-tests builds it); spans left out" >&2
fi
if ! command -v bpftrace >/dev/null; then
  apt-get install -y -qq bpftrace >/dev/null 2>&1 || echo "run-probe-cost: bpftrace does not install here; left out" >&2
fi
if command -v bpftrace >/dev/null && timeout 60 bpftrace -e 'BEGIN { exit(); }' >/dev/null 2>&1; then
  configs+=(bpftrace)
  bpftrace --version >&2
else
  echo "run-probe-cost: bpftrace does not run here; left out" >&2
fi

wait_for() { # file pattern
  local i
  for i in $(seq 1200); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.05; done
  echo "run-probe-cost: no '$2' in $1: $(cat "$1")" >&2; exit 1
}

# One run: prints "calls_per_s hits_counted calls_made". $1: a config.
one() {
  local fifo="$work/in" out="$work/out" ps="" hits="" spans=""
  rm -f "$fifo" "$work/p.out" "$work/p.err"; mkfifo -m 600 "$fifo"
  "$bin" "$seconds" <"$fifo" >"$out" &
  local pid=$!
  exec 7>"$fifo"
  wait_for "$out" ready
  case "$1" in
    min-multi|min-session)
      rm -f "$work/hold"; mkfifo -m 600 "$work/hold"
      local type=48; [ "$1" = min-session ] && type=57
      "$work/min" "$work/min.bpf.o" "$type" "$pid" "$bin" "$offset" <"$work/hold" >"$work/p.out" &
      ps=$!
      exec 8>"$work/hold"
      wait_for "$work/p.out" attached ;;
    polystack|polystack-count-hw|polystack-latency|polystack-latency-hw|polystack-args|polystack-spans)
      local monitor=count site=probe-calls:probe_counted extra=()
      case "$1" in *-hw) extra=(--hw) ;; esac
      case "$1" in polystack-latency*) monitor=latency ;; esac
      case "$1" in polystack-args|polystack-spans) monitor=args site=$site%return ;; esac
      [ "$1" = polystack-spans ] && extra=(--otlp-endpoint "http://127.0.0.1:$port")
      "$root/polystack" probe --pid "$pid" "$site" --monitor "$monitor" \
        --format json -o "$work/p.out" ${extra[@]+"${extra[@]}"} 2>"$work/p.err" &
      ps=$!
      wait_for "$work/p.out" '"type":"site"' ;;
    bpftrace)
      bpftrace -p "$pid" -e "uprobe:$bin:probe_counted { @ = count(); }" >"$work/p.out" 2>&1 &
      ps=$!
      wait_for "$work/p.out" Attaching
      until bpftool perf list 2>/dev/null | grep -q "pid $ps "; do sleep 0.05; done ;;
  esac
  echo go >&7
  exec 7>&-
  wait "$pid"
  case "$1" in
    min-*) exec 8>&-; wait "$ps"; hits=$(awk '/^hits/ {print $2}' "$work/p.out") ;;
    polystack*) wait "$ps"; hits=$(grep -o '"calls":[0-9]*' "$work/p.out" | head -1 | cut -d: -f2)
      spans=$(grep -o '"spans":[0-9]*,"spans_dropped":[0-9]*' "$work/p.out" | tr -d '"' | tr ',' ' ' || true) ;;
    bpftrace) kill -INT "$ps"; wait "$ps" || true; hits=$(awk '/^@:/ {print $2}' "$work/p.out") ;;
  esac
  echo "$(awk '/calls_per_s/ {print $2}' "$out") ${hits:--} $(awk '/calls_per_s/ {print $4}' "$out") $spans"
}

declare -A runs
for r in $(seq "$rounds"); do
  for c in "${configs[@]}"; do
    read -r v hits calls spans < <(one "$c")
    runs[$c]="${runs[$c]:-} $v"
    echo "round $r $c calls_per_s $v hits $hits calls $calls${spans:+ $spans}"
    if [ "$c" != none ] && [ "$hits" != "$calls" ]; then
      echo "run-probe-cost: $c counted $hits hits of $calls calls" >&2
    fi
  done
done
median() { tr ' ' '\n' | grep . | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
none=$(echo "${runs[none]}" | median)
base=$(echo "${runs[min-session]}" | median)
for c in "${configs[@]}"; do
  m=$(echo "${runs[$c]}" | median)
  awk -v c="$c" -v m="$m" -v n="$none" -v b="$base" 'BEGIN {
    extra = 1e9 / m - 1e9 / n; ref = 1e9 / b - 1e9 / n
    printf "%-18s median %10.0f calls/s, %7.1f ns per call, +%7.1f ns per hit", c, m, 1e9 / m, extra
    if (c != "none") printf ", %.2fx min-session", extra / ref
    printf "\n" }'
done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs, $(uname -r)"
