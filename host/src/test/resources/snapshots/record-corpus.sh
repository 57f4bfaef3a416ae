#!/usr/bin/env bash
# Re-records the snapshot corpus from live processes (needs root or ptrace rights, luajit, gcc,
# nginx, curl, and OpenResty's luajit2 and lua-nginx-module unpacked as ./run-tests does). Workloads
# run from a fresh directory under /tmp (mktemp -d: it runs as root, so never a name another user
# could create first) so the file names in expected stacks do not depend on the checkout. After recording, each case's expected stacks are the live walk's own output; check
# them with the corpus test. Each case also gets NAME.names.txt, the names LuaJIT itself gives
# the workload's functions (corpus_oracle.lua: a call hook asking debug.getinfo, the rule
# debug.traceback and jit.p use), recorded from the same workload on the same build: the corpus
# test checks the replayed stacks' names against those, not against polystack's own output.
# NAME.gdb.txt holds gdb's backtraces of the snapshot's main thread (gdb -batch -p, its own
# unwinder and symbol reader), taken just before and just after the snapshot: the corpus test
# checks the replayed native frames against the part of the stack both show.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../../../../.." && pwd)"
work="$(mktemp -d /tmp/polystack-corpus.XXXXXX)"
trap 'rm -rf "$work"' EXIT
chmod 0755 "$work" # nginx's worker (nobody) reads the Lua files; only root writes here
luajit2=${LUAJIT2_LIB:-/opt/polystack-ci/nginx-lua/usr/lib/x86_64-linux-gnu}
cp "$here"/workloads/* "$work"/
gcc -O1 -o "$work/luahost" -I/usr/include/luajit-2.1 "$work/luahost.c" \
  "$luajit2/libluajit-5.1.so.2" -Wl,-rpath,"$luajit2"

oracle_init() { # name: Lua that starts the name oracle, which exits after 2 s of CPU time
  echo "package.path='$work/?.lua;'..package.path
    require('corpus_oracle').start('$here/$1.names.txt', 2, os.exit)"
}
oracle() { # name command... (the command runs the workload with the oracle started first)
  local name=$1; shift
  rm -f "$here/$name.names.txt"
  timeout 20 "$@" > /dev/null || true # a loop the JIT compiled may run no hook to exit from
  test -s "$here/$name.names.txt"
}

backtrace() { # pid: gdb's backtrace of the thread, past main; retried while gdb's unwind
  # from an interpreter's leaf stops short (a frame at 0x0 or fewer than 3 frames)
  local bt
  for _ in 1 2 3 4 5 6 7 8 9 10; do
    bt=$(timeout 60 gdb -batch -nx -p "$1" -ex "set backtrace past-main on" -ex bt \
      2>/dev/null | grep '^#' || true)
    if [ "$(echo "$bt" | grep -c '^#')" -ge 3 ] && ! echo "$bt" | grep -q ' 0x0* in ?? '; then
      echo "$bt"; return
    fi
  done
  # JIT-compiled code (a LuaJIT trace) has no unwind tables: gdb stops at the leaf. The case
  # then has no oracle for its native frames; the corpus test says which cases lack one.
  echo "# gdb could not unwind this thread past its leaf"
  echo "$bt"
}
snapshot() { # name pid: the snapshot, with gdb's backtraces just before and after it
  local name=$1 pid=$2
  { echo "# gdb backtrace of thread $pid before the snapshot"; backtrace "$pid"; } \
    > "$work/gdb.txt"
  "$repo/polystack" snapshot --pid "$pid" -o "$here/$name.psnap" --module-store "$here/modules" \
    > "$here/$name.expected.txt"
  { echo "# gdb backtrace of thread $pid after the snapshot"; backtrace "$pid"; } \
    >> "$work/gdb.txt"
  mv "$work/gdb.txt" "$here/$name.gdb.txt"
}

record() { # name settle-seconds command...
  local name=$1 settle=$2; shift 2
  "$@" & local pid=$!
  trap "kill $pid 2>/dev/null; rm -rf '$work'" EXIT
  sleep "$settle"
  snapshot "$name" "$pid"
  kill "$pid"; wait "$pid" 2>/dev/null || true
}
oracle luajit-interpreter luajit -joff -e "$(oracle_init luajit-interpreter)" "$work/account.lua"
record luajit-interpreter 1 luajit -joff "$work/account.lua"
oracle luajit-coroutines luajit -joff -e "$(oracle_init luajit-coroutines)" \
  "$work/coroutines.lua"
record luajit-coroutines 1 luajit -joff "$work/coroutines.lua"
oracle luajit-traces luajit -e "$(oracle_init luajit-traces)" "$work/traces.lua"
record luajit-traces 2 luajit "$work/traces.lua"
oracle luajit2-shared "$work/luahost" "$work/account.lua" "$(oracle_init luajit2-shared)"
record luajit2-shared 1 "$work/luahost" "$work/account.lua"

# nginx + lua-nginx-module on OpenResty's luajit2 (unpacked by ./run-tests): one worker serving a
# request that stays in its Lua handler; the snapshot is of the worker, mid-request. The oracle
# runs in a first nginx whose worker starts it at init (it writes its file and removes its hook).
ngx=/opt/polystack-ci/nginx-lua
port=18931
nginx_start() { # init_worker_by_lua code (may be empty)
  local init=""
  if [ -n "$1" ]; then init="init_worker_by_lua_block { $1 }"; fi
  rm -rf "$work/nginx" && mkdir -p "$work/nginx/tmp"
  cat > "$work/nginx/nginx.conf" <<CONF
load_module /usr/lib/nginx/modules/ndk_http_module.so;
load_module $ngx/usr/lib/nginx/modules/ngx_http_lua_module.so;
daemon off;
master_process on;
worker_processes 1;
pid $work/nginx/nginx.pid;
error_log $work/nginx/error.log info;
events { worker_connections 16; }
http {
  access_log off;
  client_body_temp_path $work/nginx/tmp; proxy_temp_path $work/nginx/tmp;
  fastcgi_temp_path $work/nginx/tmp; uwsgi_temp_path $work/nginx/tmp;
  scgi_temp_path $work/nginx/tmp;
  lua_package_path "$work/?.lua;$ngx/usr/share/lua/5.1/?.lua;;";
  $init
  server {
    listen 127.0.0.1:$port;
    location / { content_by_lua_block { require("nginx_handler").handle() } }
  }
}
CONF
  LD_LIBRARY_PATH="$luajit2" nginx -p "$work/nginx" -c "$work/nginx/nginx.conf" & master=$!
  trap "kill $master 2>/dev/null; rm -rf '$work'" EXIT
  for _ in $(seq 60); do
    curl -s -o /dev/null "http://127.0.0.1:$port/?rounds=1" && break; sleep 0.5
  done
  curl -s -m 120 -o /dev/null "http://127.0.0.1:$port/?rounds=100000" & client=$!
}
nginx_stop() {
  kill "$client" "$master" 2>/dev/null || true; wait "$master" 2>/dev/null || true
}

# nginx's worker runs as nobody: the oracle writes where it may, and the file is read back as
# nobody too, so a link planted there by another process of nobody's reads nothing of root's.
oracle_dir="$work/oracle" && mkdir -p "$oracle_dir" && chown nobody "$oracle_dir" &&
  chmod 0700 "$oracle_dir"
nginx_start "require('corpus_oracle').start('$oracle_dir/nginx-lua.names.txt', 2)"
for _ in $(seq 120); do test -s "$oracle_dir/nginx-lua.names.txt" && break; sleep 0.5; done
sleep 3 # the first calls of the request, before its loops are compiled, show every function
nginx_stop
setpriv --reuid=nobody --regid=nogroup --clear-groups cat "$oracle_dir/nginx-lua.names.txt" \
  > "$here/nginx-lua.names.txt"

nginx_start ""
sleep 2
worker=$(pgrep -P "$master" | head -1)
snapshot nginx-lua "$worker"
nginx_stop

ls -l "$here"/*.psnap "$here"/*.names.txt "$here"/*.gdb.txt "$here"/modules
