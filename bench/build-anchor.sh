#!/usr/bin/env bash
# Builds the anchor, the OpenTelemetry eBPF profiler, from its Go module (through the Go module
# proxy, as `go` fetches any module) into e2e/target/anchor/ebpf-profiler, for
# bench/run-agent.sh to run side by side with `polystack agent`.
#
# One change is made to the module's source before building, in a scratch copy: its
# rlimit.MaximizeMemlock fails when RLIMIT_MEMLOCK cannot be raised (no CAP_SYS_RESOURCE, as in
# a container with a hard limit), and it stops the profiler; since Linux 5.11 BPF memory is
# charged to the memory cgroup, not to that limit, so the copy carries on without it, as
# polystack does. Nothing fetched is kept outside e2e/target.
# Usage: bench/build-anchor.sh [VERSION (default v0.0.202633)]
set -euo pipefail
root="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)"
version=${1:-v0.0.202633}
out="$root/e2e/target/anchor"
command -v go >/dev/null || { echo "build-anchor: go not found (the Go toolchain builds the test Collector too)" >&2; exit 1; }
mkdir -p "$out"
work=$(mktemp -d)
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
dir=$(cd "$work" && go mod download -json "go.opentelemetry.io/ebpf-profiler@$version" |
  python3 -c 'import json, sys; d = json.load(sys.stdin); print(d.get("Dir") or sys.exit("build-anchor: " + d.get("Error", "no Dir")))')
cp -r "$dir" "$work/src"
chmod -R u+w "$work/src"
file="$work/src/rlimit/rlimit.go"
grep -q 'return nil, fmt.Errorf("failed to set temporary rlimit: %w", err)' "$file" ||
  { echo "build-anchor: $version's rlimit.go is not as expected; look at $file" >&2; exit 1; }
sed -i 's|return nil, fmt.Errorf("failed to set temporary rlimit: %w", err)|return func() {}, nil; _ = fmt.Errorf("failed to set temporary rlimit: %w", err)|' "$file"
(cd "$work/src" && go build -o "$out/ebpf-profiler" .)
echo "$version" > "$out/VERSION"
echo "built $out/ebpf-profiler ($version)"
