#!/usr/bin/env bash
# Heap that parsed symbol tables retain: opens each file given (default: the test Collector, a Go
# binary with a large .symtab; libjvm.so; luajit; libc; libstdc++), builds its address index
# (the Symbolizer every module of a profiled process gets) and prints the heap still used after
# full collections, per indexed symbol. Run after a build (mvn -DskipTests package).
# Figures: docs/benchmarks.md, "Where the agent's memory and CPU go".
set -euo pipefail
root="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)"
if [ $# -eq 0 ]; then
  set -- $(ls "$root"/e2e/target/collector/*/polystack-otelcol 2>/dev/null | head -1) \
    "$(dirname "$(readlink -f "$(command -v java)")")/../lib/server/libjvm.so" \
    /usr/bin/luajit /lib/x86_64-linux-gnu/libc.so.6 /usr/lib/x86_64-linux-gnu/libstdc++.so.6
fi
cp="$root/host/target/classes:$root/otel-bridge/target/classes:$root/plugin-api/target/classes"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
javac -d "$out" -cp "$cp" "$root/bench/SymbolMemory.java"
java -Xmx2g -XX:+UseSerialGC -cp "$out:$cp" SymbolMemory "$@"
