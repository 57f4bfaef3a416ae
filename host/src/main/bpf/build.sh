#!/usr/bin/env bash
# Rebuilds the BPF objects polystack ships, one per *.bpf.c here (tick_capture.bpf.o for the
# bpf sampling mode, vdso_trace.bpf.o for the vdso tracer's bpf backend): the objects are
# committed so that users need no clang, and CI runs `build.sh --check` so that they never
# drift from their sources.
#
#   host/src/main/bpf/build.sh          rewrite host/src/main/resources/.../*.bpf.o
#   host/src/main/bpf/build.sh --check  exit 1 if a committed object differs from a rebuild
#
# Needs clang and libbpf-dev (bpf/bpf_helpers.h). The bytes depend on the compiler and header
# versions, so the committed objects come from Debian 12's (clang 14.0.6, libbpf-dev 1.1.2), the
# CI image; debug paths are mapped so they do not depend on where the checkout lives.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd -P)
root=$(cd "$here/../../../.." && pwd -P)
out="$root/host/src/main/resources/dev/polystack/host/bpf"

command -v clang >/dev/null 2>&1 || {
  echo "build.sh: clang is not installed (apt-get install clang libbpf-dev)" >&2
  exit 2
}

build() {
  # Compiled from its own directory under a relative name: with the prefix map, DWARF and BTF
  # carry "host/src/main/bpf/NAME.bpf.c" whatever the checkout path.
  (cd "$here" && clang -O2 -g -target bpf -Wall -Werror \
    -I/usr/include/x86_64-linux-gnu \
    -fdebug-prefix-map="$here"=host/src/main/bpf \
    -c "$1" -o "$2")
}

case "${1:-}" in
  "" | --check) ;;
  *)
    echo "usage: $0 [--check]" >&2
    exit 2
    ;;
esac

stale=0
for source in "$here"/*.bpf.c; do
  name=$(basename "$source" .c)
  object="$out/$name.o"
  if [ -z "${1:-}" ]; then
    build "$name.c" "$object.tmp"
    mv "$object.tmp" "$object"
    echo "wrote ${object#"$root"/}"
  else
    tmp=$(mktemp)
    build "$name.c" "$tmp"
    if ! cmp -s "$tmp" "$object"; then
      echo "$name.o is stale: run host/src/main/bpf/build.sh" >&2
      stale=1
    fi
    rm -f "$tmp"
  fi
done
exit "$stale"
