#!/usr/bin/env bash
# Rebuilds the BPF object polystack ships: the object is committed so that users need no clang,
# and CI runs `build.sh --check` so that it never drifts from tick_capture.bpf.c.
#
#   host/src/main/bpf/build.sh          rewrite host/src/main/resources/.../tick_capture.bpf.o
#   host/src/main/bpf/build.sh --check  exit 1 if the committed object differs from a rebuild
#
# Needs clang and libbpf-dev (bpf/bpf_helpers.h). The bytes depend on the compiler and header
# versions, so the committed object comes from Debian 12's (clang 14.0.6, libbpf-dev 1.1.2), the
# CI image; debug paths are mapped so they do not depend on where the checkout lives.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd -P)
root=$(cd "$here/../../../.." && pwd -P)
object="$root/host/src/main/resources/dev/polystack/host/bpf/tick_capture.bpf.o"

command -v clang >/dev/null 2>&1 || {
  echo "build.sh: clang is not installed (apt-get install clang libbpf-dev)" >&2
  exit 2
}

build() {
  # Compiled from its own directory under a relative name: with the prefix map, DWARF and BTF
  # carry "host/src/main/bpf/tick_capture.bpf.c" whatever the checkout path.
  (cd "$here" && clang -O2 -g -target bpf -Wall -Werror \
    -I/usr/include/x86_64-linux-gnu \
    -fdebug-prefix-map="$here"=host/src/main/bpf \
    -c tick_capture.bpf.c -o "$1")
}

case "${1:-}" in
  "")
    build "$object.tmp"
    mv "$object.tmp" "$object"
    echo "wrote ${object#"$root"/}"
    ;;
  --check)
    tmp=$(mktemp)
    trap 'rm -f "$tmp"' EXIT
    build "$tmp"
    if ! cmp -s "$tmp" "$object"; then
      echo "tick_capture.bpf.o is stale: run host/src/main/bpf/build.sh" >&2
      exit 1
    fi
    ;;
  *)
    echo "usage: $0 [--check]" >&2
    exit 2
    ;;
esac
