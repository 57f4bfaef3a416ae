#!/usr/bin/env bash
# Stray-trap reproducer matrix (bench/stray-trap.c, C only): for each breakpoint mechanism and
# each candidate condition, SECONDS of clock_gettime calls from traced processes that count every
# SIGTRAP they get; prints a markdown table of breakpoint hits, stray TRAP_BRKPT signals and the
# rate per million hits. The breakpoints sit where polystack's bpf backend puts them: the vDSO
# entry of clock_gettime and each of its `ret`s (found with objdump in this process's vDSO).
#
# Usage: bench/run-stray-trap.sh [--seconds N] [--mechanisms LIST] [--conditions LIST]
#                                [--repeat N] [--out FILE]
#   --seconds N     window per run (default 20)
#   --mechanisms    comma-separated, of none,perf,bpf,sigtrap (default perf,bpf,sigtrap)
#   --conditions    comma-separated, of quiet,busy,others,toggle,migrate,exec,wakeups
#                   (default all)
#   --repeat N      runs per cell (default 1)
#   --out FILE      also write the table there
# Needs root (perf_event breakpoints on other processes, BPF), gcc, objdump, python3.
set -euo pipefail

root="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)"
bench_name=run-stray-trap
. "$root/bench/lib.sh"
seconds=20
mechanisms=perf,bpf,sigtrap
conditions=quiet,busy,others,toggle,migrate,exec,wakeups
repeat=1
out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds="$2"; shift 2 ;;
    --mechanisms) mechanisms="$2"; shift 2 ;;
    --conditions) conditions="$2"; shift 2 ;;
    --repeat) repeat="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    -h|--help) usage "$0"; exit 0 ;;
    *) die "unknown option $1 (see --help)" ;;
  esac
done
require_tools gcc objdump python3
work="$(mktemp -d /tmp/stray-trap.XXXXXX)"
trap 'rm -rf "$work"' EXIT
gcc -O2 -Wall -o "$work/stray-trap" "$root/bench/stray-trap.c" -lpthread

read -r _entry rets < <(python3 - "$work/vdso.so" <<'EOF'
import re, subprocess, sys
so = sys.argv[1]
for line in open("/proc/self/maps"):
    if "[vdso]" in line:
        lo, hi = (int(x, 16) for x in line.split()[0].split("-"))
        with open("/proc/self/mem", "rb") as mem:
            mem.seek(lo)
            open(so, "wb").write(mem.read(hi - lo))
sym = [l.split() for l in subprocess.run(["objdump", "-T", so], capture_output=True,
       text=True, check=True).stdout.splitlines()]
f = next(s for s in sym if s and s[-1] == "__vdso_clock_gettime")
lo = int(f[0], 16); hi = lo + int(f[-3], 16)
code = subprocess.run(["objdump", "-d", so], capture_output=True, text=True, check=True).stdout
rets = [int(m.group(1), 16) for m in re.finditer(r"^ +([0-9a-f]+):\t[^\n]*\tret", code, re.M)]
print(hex(lo), ",".join(hex(a) for a in rets if lo <= a < hi))
EOF
)
log "clock_gettime rets at $rets; $(machine_info 2>/dev/null || uname -r)"

table="| mechanism | condition | runs x s | breakpoint hits | stray SIGTRAPs | per million hits | targets alive |
|---|---|---|---|---|---|---|"
for m in ${mechanisms//,/ }; do
  for c in ${conditions//,/ }; do
    hits=0 strays=0 alive=0 total=0
    for _ in $(seq "$repeat"); do
      line="$("$work/stray-trap" -m "$m" -c "$c" -s "$seconds" -r "$rets")"
      log "$line (load $(cut -d' ' -f1-3 /proc/loadavg))"
      h="$(sed -n 's/.*hits=\([0-9]*\).*/\1/p' <<<"$line")"
      s="$(sed -n 's/.*strays=\([0-9]*\).*/\1/p' <<<"$line")"
      a="$(sed -n 's/.*alive=\([0-9]*\)\/\([0-9]*\).*/\1 \2/p' <<<"$line")"
      hits=$((hits + h)); strays=$((strays + s))
      alive=$((alive + ${a% *})); total=$((total + ${a#* }))
    done
    rate="$(awk -v s="$strays" -v h="$hits" 'BEGIN {if (h) printf "%.2f", s * 1e6 / h; else print "n/a"}')"
    table+=$'\n'"| $m | $c | $repeat x $seconds | $hits | $strays | $rate | $alive of $total |"
  done
done
echo "$table"
[ -z "$out" ] || echo "$table" >"$out"
