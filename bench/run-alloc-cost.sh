#!/usr/bin/env bash
# Per-call cost of allocation profiles (docs/allocations.md): bench/alloc-calls.c runs
# malloc(64)+free for SECONDS of its thread's CPU time and prints its calls per second, alone,
# under bench/alloc-uprobe-floor (the same uprobe session link on malloc and free with a BPF
# program that only returns: the trap's floor), under `polystack record --event alloc` at the
# default rate and under --alloc-every-call, in ROUNDS interleaved rounds of one run. Prints each run's figure, the medians, the per-call
# cost in ns derived from them, and the load average.
#
# Usage: bench/run-alloc-cost.sh [ROUNDS] [SECONDS]   (default 3 rounds of 3 s; root)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
rounds=${1:-3}
seconds=${2:-3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
gcc -O2 -o "$work/alloc-calls" "$root/bench/alloc-calls.c"
clang -O2 -g -target bpf -I/usr/include/x86_64-linux-gnu \
  -c "$root/bench/alloc-uprobe-floor.bpf.c" -o "$work/floor.bpf.o"
gcc -O2 -o "$work/floor" "$root/bench/alloc-uprobe-floor.c" -lbpf
libc=/lib/x86_64-linux-gnu/libc.so.6
# A symbol's file offset: through the PT_LOAD that holds its address, as polystack computes it.
offset_of() {
  local vaddr type off addr phys filesz rest
  vaddr=$((16#$(readelf -sW --dyn-syms "$libc" |
    awk -v s="$1@@" 'index($8, s) == 1 {print $2; exit}')))
  while read -r type off addr phys filesz rest; do
    if [ "$type" = LOAD ] && [ "$vaddr" -ge $((addr)) ] && [ "$vaddr" -lt $((addr + filesz)) ]; then
      printf '0x%x\n' $((vaddr - addr + off))
      return
    fi
  done < <(readelf -lW "$libc")
}
offsets="$(offset_of malloc) $(offset_of free)"
"$root/polystack" --version >/dev/null 2>&1 # builds the distribution once, outside the runs

# One run: prints calls per second. $1: none | default | every
one() {
  local fifo="$work/in" out="$work/out" ps=""
  rm -f "$fifo"; mkfifo -m 600 "$fifo"
  "$work/alloc-calls" "$seconds" <"$fifo" >"$out" &
  local pid=$!
  exec 7>"$fifo"
  until grep -q ready "$out" 2>/dev/null; do sleep 0.01; done
  if [ "$1" = floor ]; then
    rm -f "$work/hold"; mkfifo -m 600 "$work/hold"
    # shellcheck disable=SC2086
    "$work/floor" "$work/floor.bpf.o" "$pid" "$libc" $offsets <"$work/hold" >"$work/f.out" &
    ps=$!
    exec 8>"$work/hold"
    until grep -q attached "$work/f.out" 2>/dev/null; do sleep 0.01; done
  elif [ "$1" != none ]; then
    local extra=()
    [ "$1" = every ] && extra=(--alloc-every-call)
    "$root/polystack" record --event alloc --pid "$pid" -o "$work/p.pb.gz" "${extra[@]}" \
      2>"$work/ps.err" &
    ps=$!
    until bpftool link list 2>/dev/null | grep -Eq 'uprobe_multi|type 12'; do sleep 0.05; done
  fi
  echo go >&7
  exec 7>&-
  wait "$pid"
  [ "$1" = floor ] && exec 8>&-
  [ -n "$ps" ] && wait "$ps"
  awk '/calls_per_s/ {print $2}' "$out"
}

declare -A runs
for r in $(seq "$rounds"); do
  for c in none floor default every; do
    v=$(one "$c")
    runs[$c]="${runs[$c]:-} $v"
    echo "round $r $c calls_per_s $v"
  done
done
median() { tr ' ' '\n' | grep . | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
none=$(echo "${runs[none]}" | median)
for c in none floor default every; do
  m=$(echo "${runs[$c]}" | median)
  awk -v c="$c" -v m="$m" -v n="$none" 'BEGIN { printf "%-8s median %.0f calls/s, %.0f ns per call, +%.0f ns per call\n", c, m, 1e9 / m, 1e9 / m - 1e9 / n }'
done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs"
