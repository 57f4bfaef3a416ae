#!/usr/bin/env bash
# Rebuilds plugin-api-1.3.jar, the baseline of plugin-api's compatibility check (japicmp, in
# plugin-api/pom.xml): plugin-api's main classes at the last commit that changed them while
# ApiVersion.CURRENT was 1.3, compiled for Java 17, with fixed timestamps so that a rebuild gives
# the same bytes (docs/plugin-authoring.md, "API compatibility check").
# Usage: plugin-api/api-baseline/build-baseline.sh   (needs git history and a JDK 17)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
commit=00170ae8463dbf32aa1a592fdb97077be10dca07
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
git -C "$root" archive "$commit" plugin-api/src/main/java | tar -x -C "$tmp"
src="$tmp/plugin-api/src/main/java"
grep -q 'CURRENT = new ApiVersion(1, 3)' "$src/dev/polystack/plugin/api/ApiVersion.java" || {
  echo "build-baseline: $commit does not define API 1.3" >&2
  exit 1
}
mkdir "$tmp/classes"
find "$src" -name '*.java' | LC_ALL=C sort > "$tmp/sources"
javac --release 17 -encoding UTF-8 -d "$tmp/classes" @"$tmp/sources"
find "$tmp/classes" -exec touch -h -d '2026-12-02T23:33:36Z' {} +
jar --create --date=2026-12-02T23:33:36Z --file "$tmp/plugin-api-1.3.jar" -C "$tmp/classes" .
mv "$tmp/plugin-api-1.3.jar" "$here/plugin-api-1.3.jar"
sha256sum "$here/plugin-api-1.3.jar"
