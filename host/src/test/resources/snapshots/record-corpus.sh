#!/usr/bin/env bash
# Re-records the snapshot corpus from live processes (needs root or ptrace rights, luajit, gcc,
# and OpenResty's luajit2 unpacked as .ci/run does). Workloads run from /tmp/polystack-corpus so
# the file names in expected stacks do not depend on the checkout. After recording, each case's
# expected stacks are the live walk's own output; check them with the corpus test.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../../../../.." && pwd)"
work=/tmp/polystack-corpus
luajit2=${LUAJIT2_LIB:-/opt/polystack-ci/nginx-lua/usr/lib/x86_64-linux-gnu}
rm -rf "$work" && mkdir -p "$work" && cp "$here"/workloads/* "$work"/
gcc -O1 -o "$work/luahost" -I/usr/include/luajit-2.1 "$work/luahost.c" \
  "$luajit2/libluajit-5.1.so.2" -Wl,-rpath,"$luajit2"

record() { # name settle-seconds command...
  local name=$1 settle=$2; shift 2
  "$@" & local pid=$!
  trap "kill $pid 2>/dev/null" EXIT
  sleep "$settle"
  "$repo/polystack" snapshot --pid "$pid" -o "$here/$name.psnap" --module-store "$here/modules" \
    > "$here/$name.expected.txt"
  kill "$pid"; wait "$pid" 2>/dev/null || true
}
record luajit-interpreter 1 luajit -joff "$work/account.lua"
record luajit-coroutines 1 luajit -joff "$work/coroutines.lua"
record luajit-traces 2 luajit "$work/traces.lua"
record luajit2-shared 1 "$work/luahost" "$work/account.lua"
ls -l "$here"/*.psnap "$here"/modules
