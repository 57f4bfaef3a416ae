#!/usr/bin/env bash
# Re-records the snapshot corpus from live processes (needs root or ptrace rights, luajit, gcc,
# nginx, curl, and OpenResty's luajit2 and lua-nginx-module unpacked as ./run-tests does). Workloads
# run from /tmp/polystack-corpus so the file names in expected stacks do not depend on the
# checkout. After recording, each case's expected stacks are the live walk's own output; check
# them with the corpus test.
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

# nginx + lua-nginx-module on OpenResty's luajit2 (unpacked by ./run-tests): one worker serving a
# request that stays in its Lua handler; the snapshot is of the worker, mid-request.
ngx=/opt/polystack-ci/nginx-lua
port=18931
mkdir -p "$work/nginx/tmp"
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
  server {
    listen 127.0.0.1:$port;
    location / { content_by_lua_block { require("nginx_handler").handle() } }
  }
}
CONF
LD_LIBRARY_PATH="$luajit2" nginx -p "$work/nginx" -c "$work/nginx/nginx.conf" & master=$!
trap "kill $master 2>/dev/null" EXIT
for _ in $(seq 60); do curl -s -o /dev/null "http://127.0.0.1:$port/?rounds=1" && break; sleep 0.5; done
curl -s -m 120 -o /dev/null "http://127.0.0.1:$port/?rounds=100000" & client=$!
sleep 2
worker=$(pgrep -P "$master" | head -1)
"$repo/polystack" snapshot --pid "$worker" -o "$here/nginx-lua.psnap" \
  --module-store "$here/modules" > "$here/nginx-lua.expected.txt"
kill "$client" "$master" 2>/dev/null || true; wait "$master" 2>/dev/null || true

ls -l "$here"/*.psnap "$here"/modules
