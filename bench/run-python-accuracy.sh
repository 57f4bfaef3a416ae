#!/usr/bin/env bash
# CPython accuracy and cost (issue #27's figures): bench/python_phases.py (3 threads; phases in
# pure Python, in a C extension call without the GIL, and asleep) under `polystack record` with
# the out-of-tree CPython plug-in at its defaults (bpf mode, 99 Hz), and under py-spy at the
# same rate (blocking, its default, and --nonblocking), and with no profiler, alternating,
# ROUNDS rounds. Per run: the total variation distance of the profile's phase shares from the
# program's own (bench/phase_shares.py), the program's CPU seconds and wall time, the
# profiler's CPU seconds (its process tree's user + system time), and the steps the program's
# threads completed in its fixed time: the target's slowdown is the round's unprofiled steps
# over the profiled run's.
#
#   bench/run-python-accuracy.sh [ROUNDS [SECONDS [PYTHON]]]   defaults: 3, 10, /usr/bin/python3.11
#
# Needs the CPython example built against the installed plugin-api (run-tests does that) and
# py-spy (pip install py-spy, from PyPI). Run it with nothing else busy: both profilers' CPU is
# read from /proc and compared in one run.
set -euo pipefail
bench_name=run-python-accuracy
root=$(cd "$(dirname "$0")/.." && pwd -P)
source "$root/bench/lib.sh"
rounds=${1:-3}
secs=${2:-10}
python=${3:-/usr/bin/python3.11}
command -v py-spy >/dev/null || die "py-spy not found: pip install py-spy"
work=$(mktemp -d /tmp/python-accuracy.XXXXXX)
chmod a+rx "$work"
mvn -B -q -o -f "$root/docs/examples/cpython-plugin/pom.xml" package -DskipTests >&2 ||
  die "cannot build the CPython example (install plugin-api first: mvn -pl plugin-api -am install)"
mkdir -p "$work/plugins"
install -m 0644 "$root"/docs/examples/cpython-plugin/target/cpython-plugin-*.jar "$work/plugins/"
"$root/polystack" plugins >/dev/null

# CPU seconds of a finished command and the children it waited for: GNU time's user + system.
# The profiler's own is that minus the program's (python_phases.py writes its process time).
timed() { # out_file command...
  local t="$1"; shift
  /usr/bin/time -f "%U %S %e" -o "$t" "$@"
}

echo "round tool tvd samples profiler_cpu_s program_cpu_s program_wall_s steps slowdown"
for r in $(seq 1 "$rounds"); do
  for tool in none polystack py-spy py-spy-nonblocking; do
    base="$work/$r-$tool"
    program=("$python" "$root/bench/python_phases.py" "$base.phases" "$secs")
    case "$tool" in
      none) timed "$base.time" "${program[@]}" 2>"$base.err" >/dev/null ;;
      polystack) timed "$base.time" "$root/polystack" record --plugin-path "$work/plugins" \
        -o "$base.folded" -- "${program[@]}" 2>"$base.err" >/dev/null ;;
      py-spy) timed "$base.time" py-spy record --rate 99 --format raw -o "$base.folded" \
        -- "${program[@]}" 2>"$base.err" >/dev/null ;;
      py-spy-nonblocking) timed "$base.time" py-spy record --rate 99 --nonblocking --format raw \
        -o "$base.folded" -- "${program[@]}" 2>"$base.err" >/dev/null ;;
    esac
    read -r tu ts _ <"$base.time"
    read -r pc pw steps <"$base.phases.cpu"
    if [ "$tool" = none ]; then
      unprofiled=$steps
      printf "%s none - - - %.2f %.2f %s 1.000\n" "$r" "$pc" "$pw" "$steps"
      continue
    fi
    line=$(python3 "$root/bench/phase_shares.py" "$base.phases" "$base.folded" | grep '^tvd')
    awk -v r="$r" -v t="$tool" -v l="$line" -v tu="$tu" -v ts="$ts" -v pc="$pc" -v pw="$pw" \
      -v st="$steps" -v un="$unprofiled" 'BEGIN { split(l, f, " ");
        printf "%s %s %s %s %.2f %.2f %.2f %s %.3f\n", r, t, f[3], f[5], tu + ts - pc, pc, pw,
          st, un / st }'
  done
done
log "runs kept in $work"
