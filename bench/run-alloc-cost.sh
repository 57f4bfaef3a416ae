#!/usr/bin/env bash
# Per-call cost of allocation profiles (docs/allocations.md): bench/alloc-calls.c runs
# malloc(64)+free for SECONDS of its thread's CPU time and prints its calls per second, alone,
# under bench/alloc-uprobe-floor (the same uprobe session link on malloc and free with a BPF
# program that only returns: the trap's floor), under `polystack record --event alloc` at the
# default rate and under --alloc-every-call, and under `perf record -e` on uprobes that
# `perf probe` places at the sites polystack probes (libc's malloc, calloc, realloc, free,
# posix_memalign and aligned_alloc, which memalign shares): without call graphs (perf), with
# frame-pointer call graphs (perf-fp, -g) and with DWARF stack copies (perf-dwarf,
# --call-graph dwarf: 8 KiB of stack per call, as polystack copies per sampled call), in ROUNDS
# interleaved rounds of one run. Prints each run's figure (for perf, also the samples it wrote
# against the calls made, its lost chunks and its data size), the medians, the per-call cost in
# ns derived from them, the ratios to no probe and to polystack's default (ns per call over
# theirs), the spread of the rounds, the machine and the load average before and after. Without
# perf, or when `perf probe` fails, the perf configurations are left out and a line says why.
# The perf probes are removed on exit, and tracefs is unmounted if the script mounted it.
#
# Usage: bench/run-alloc-cost.sh [ROUNDS] [SECONDS]   (default 3 rounds of 3 s; root)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bench_name=run-alloc-cost
# shellcheck source=bench/lib.sh
. "$root/bench/lib.sh"
rounds=${1:-3}
seconds=${2:-3}
work=$(mktemp -d)
probe_group=polystack_alloc_$$
probes_added=0
tracefs_mounted=0
cleanup() {
  if [ "$probes_added" = 1 ]; then
    perf probe -q -d "$probe_group:*" >/dev/null 2>&1 || log "could not remove the perf probes $probe_group:*"
  fi
  if [ "$tracefs_mounted" = 1 ]; then umount /sys/kernel/tracing 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
gcc -O2 -o "$work/alloc-calls" "$root/bench/alloc-calls.c"
clang -O2 -g -target bpf -I/usr/include/x86_64-linux-gnu \
  -c "$root/bench/alloc-uprobe-floor.bpf.c" -o "$work/floor.bpf.o"
gcc -O2 -o "$work/floor" "$root/bench/alloc-uprobe-floor.c" -lbpf
libc=/lib/x86_64-linux-gnu/libc.so.6
# A symbol's file offset: through the PT_LOAD that holds its address, as polystack computes it.
offset_of() {
  local vaddr type off addr phys filesz rest hex
  hex=$(readelf -sW --dyn-syms "$libc" | awk -v s="$1@@" 'index($8, s) == 1 {print $2; exit}')
  [ -n "$hex" ] || return 0
  vaddr=$((16#$hex))
  while read -r type off addr phys filesz rest; do
    if [ "$type" = LOAD ] && [ "$vaddr" -ge $((addr)) ] && [ "$vaddr" -lt $((addr + filesz)) ]; then
      printf '0x%x\n' $((vaddr - addr + off))
      return
    fi
  done < <(readelf -lW "$libc")
}
offsets="$(offset_of malloc) $(offset_of free)"
"$root/polystack" --version >/dev/null 2>&1 # builds the distribution once, outside the runs

configs=(none floor default every)
# perf record on uprobes at polystack's sites: AllocatorSites.LIBC's functions, in its order, one
# probe per offset (aligned_alloc and memalign share one in glibc: two probes there would trap
# twice per call). The workload calls only malloc and free; the others are placed all the same.
perf_events=()
perf_sites=()
setup_perf() {
  local f off seen=" " err placed
  if ! command -v perf >/dev/null 2>&1; then
    log "perf not found (Debian: linux-perf): perf configurations left out"; return 0
  fi
  if [ ! -e /sys/kernel/tracing/uprobe_events ]; then
    if mount -t tracefs nodev /sys/kernel/tracing 2>"$work/mount.err"; then
      tracefs_mounted=1
    else
      log "tracefs is not mounted and could not be ($(head -1 "$work/mount.err")): perf configurations left out"
      return 0
    fi
  fi
  for f in malloc calloc realloc free posix_memalign aligned_alloc memalign; do
    off=$(offset_of "$f")
    [ -n "$off" ] || continue
    case "$seen" in *" $off "*) log "perf: $f is at $off, already probed: not probed twice"; continue ;; esac
    seen+="$off "
    probes_added=1
    if ! err=$(perf probe -x "$libc" -a "$probe_group:$f=$f" 2>&1); then
      log "perf probe -x $libc -a $probe_group:$f=$f failed: $(echo "$err" | grep -m1 -i error || echo "$err" | grep -m1 .): perf configurations left out"
      return 0
    fi
    # Where perf placed it must be where polystack places it.
    placed=$(awk -v e="p:$probe_group/$f" '$1 == e {sub(/.*:/, "", $2); print $2}' /sys/kernel/tracing/uprobe_events)
    if [ -z "$placed" ] || [ $((placed)) -ne $((off)) ]; then
      log "perf placed $f at ${placed:-nothing}, polystack at $off: perf configurations left out"
      return 0
    fi
    perf_events+=(-e "$probe_group:$f")
    perf_sites+=("$f@$off")
  done
  log "perf $(perf --version | awk '{print $3}'): uprobes on ${perf_sites[*]} in $libc"
  configs+=(perf perf-fp perf-dwarf)
}
setup_perf

# Whether process HOLDER holds a uprobe_multi link on process TARGET (its fdinfo names the pid).
uprobe_link_of() { # holder target
  local f
  for f in /proc/"$1"/fdinfo/*; do
    grep -qs '^link_type:[[:space:]]*uprobe_multi' "$f" && grep -qsE "^pid:[[:space:]]*$2\$" "$f" && return 0
  done
  return 1
}

# One run: prints calls per second. $1: none | floor | default | every | perf | perf-fp |
# perf-dwarf. A perf run also writes "samples CALLS_RECORDED calls CALLS_MADE lost_chunks N
# data_mb MB" to $work/perf.line.
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
  elif [ "${1#perf}" != "$1" ]; then
    local cg=()
    [ "$1" = perf-fp ] && cg=(-g)
    [ "$1" = perf-dwarf ] && cg=(--call-graph dwarf)
    rm -f "$work/ctl" "$work/ack" "$work/perf.data"; mkfifo -m 600 "$work/ctl" "$work/ack"
    # Events start disabled; the workload goes once perf has acknowledged enabling them.
    perf record "${perf_events[@]}" "${cg[@]}" -D -1 --control "fifo:$work/ctl,$work/ack" \
      -o "$work/perf.data" -p "$pid" 2>"$work/perf.err" &
    ps=$!
    exec 9<>"$work/ack"
    echo enable >"$work/ctl"
    local ack=""
    read -r -t 30 ack <&9 || true
    exec 9>&-
    [ "$ack" = ack ] || { kill "$pid" "$ps" 2>/dev/null; die "perf record did not enable its events: $(head -3 "$work/perf.err")"; }
  elif [ "$1" != none ]; then
    local extra=()
    [ "$1" = every ] && extra=(--alloc-every-call)
    "$root/polystack" record --event alloc --pid "$pid" -o "$work/p.pb.gz" "${extra[@]}" \
      2>"$work/ps.err" &
    ps=$!
    # Its own link on this workload: a link of another process (the floor's, released a moment
    # after it exits) would start the workload before polystack probes it.
    until uprobe_link_of "$ps" "$pid"; do
      kill -0 "$ps" 2>/dev/null || die "polystack record ended before it attached: $(tail -1 "$work/ps.err")"
      sleep 0.05
    done
  fi
  echo go >&7
  exec 7>&-
  wait "$pid"
  [ "$1" = floor ] && exec 8>&-
  if [ -n "$ps" ] && ! wait "$ps"; then
    local err="$work/ps.err"
    [ "${1#perf}" != "$1" ] && err="$work/perf.err"
    [ "$1" = floor ] && err=/dev/null
    log "$1: the profiler exited with an error: $(grep . "$err" | tail -1)"
  fi
  if [ "${1#perf}" != "$1" ]; then
    echo "samples $(sed -n 's/.*(\([0-9]*\) samples).*/\1/p' "$work/perf.err" | tail -1)" \
      "calls $(awk '/calls_per_s/ {print $6}' "$out")" \
      "lost_chunks $(sed -n 's/.*and lost \([0-9]*\) chunks.*/\1/p' "$work/perf.err" | tail -1 | grep . || echo 0)" \
      "data_mb $(awk -v b="$(stat -c %s "$work/perf.data")" 'BEGIN {printf "%.1f", b / 1048576}')" \
      >"$work/perf.line"
    rm -f "$work/perf.data"
  fi
  awk '/calls_per_s/ {print $2}' "$out"
}

echo "machine: $(machine_info)"
echo "start: $(date -u +%Y-%m-%dT%H:%M:%SZ), load average $(cut -d' ' -f1-3 /proc/loadavg)"
declare -A runs
for r in $(seq "$rounds"); do
  for c in "${configs[@]}"; do
    v=$(one "$c")
    runs[$c]="${runs[$c]:-} $v"
    if [ "${c#perf}" != "$c" ]; then
      echo "round $r $c calls_per_s $v $(cat "$work/perf.line")"
    else
      echo "round $r $c calls_per_s $v"
    fi
  done
done
median() { tr ' ' '\n' | grep . | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
none=$(echo "${runs[none]}" | median)
default=$(echo "${runs[default]}" | median)
for c in "${configs[@]}"; do
  m=$(echo "${runs[$c]}" | median)
  span=$(echo "${runs[$c]}" | tr ' ' '\n' | grep . | sort -n | sed -n '1p;$p' | paste -sd-)
  awk -v c="$c" -v m="$m" -v n="$none" -v d="$default" -v s="$span" 'BEGIN { printf "%-10s median %.0f calls/s, %.0f ns per call, +%.0f ns per call, %.1fx no probe, %.2fx default (rounds %s)\n", c, m, 1e9 / m, 1e9 / m - 1e9 / n, n / m, d / m, s }'
done
echo "end: $(date -u +%Y-%m-%dT%H:%M:%SZ), load average: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs"
