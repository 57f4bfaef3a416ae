#!/usr/bin/env bash
# Rebuilds plugin-api-2.0.jar, the baseline of plugin-api's compatibility check (japicmp, in
# plugin-api/pom.xml): plugin-api's main classes at the last commit that changed them while
# ApiVersion.CURRENT was 2.0, compiled for Java 17, with fixed timestamps so that a rebuild gives
# the same bytes (docs/plugin-authoring.md, "API compatibility check").
# Usage: plugin-api/api-baseline/build-baseline.sh   (needs git history and a JDK 17)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
commit=a6025f1c47dabbda49d92612a46e262379b2686b
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
git -C "$root" archive "$commit" plugin-api/src/main/java | tar -x -C "$tmp"
src="$tmp/plugin-api/src/main/java"
grep -q 'CURRENT = new ApiVersion(2, 0)' "$src/dev/polystack/plugin/api/ApiVersion.java" || {
  echo "build-baseline: $commit does not define API 2.0" >&2
  exit 1
}
mkdir "$tmp/classes"
find "$src" -name '*.java' | LC_ALL=C sort > "$tmp/sources"
javac --release 17 -encoding UTF-8 -d "$tmp/classes" @"$tmp/sources"
find "$tmp/classes" -exec touch -h -d '2026-12-07T15:40:00Z' {} +
jar --create --date=2026-12-07T15:40:00Z --file "$tmp/plugin-api-2.0.jar" -C "$tmp/classes" .
mv "$tmp/plugin-api-2.0.jar" "$here/plugin-api-2.0.jar"
sha256sum "$here/plugin-api-2.0.jar"
