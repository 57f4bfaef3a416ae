#!/usr/bin/env bash
# Rebuilds plugin-kit-2.0.jar, the baseline of the author kit's compatibility check (japicmp,
# second execution in plugin-api/pom.xml): the kit's classes (plugin-api/src/test/java, package
# dev.polystack.plugin.api.kit, without its own tests) at the commit below, where
# ApiVersion.CURRENT is 2.0, compiled with that commit's API for Java 17, with fixed timestamps
# so that a rebuild gives the same bytes (docs/plugin-authoring.md, "API compatibility check").
# Usage: plugin-api/api-baseline/build-kit-baseline.sh   (needs git history and a JDK 17)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
commit=a6025f1c47dabbda49d92612a46e262379b2686b
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
git -C "$root" archive "$commit" plugin-api/src | tar -x -C "$tmp"
api="$tmp/plugin-api/src/main/java"
kit="$tmp/plugin-api/src/test/java/dev/polystack/plugin/api/kit"
grep -q 'CURRENT = new ApiVersion(2, 0)' "$api/dev/polystack/plugin/api/ApiVersion.java" || {
  echo "build-kit-baseline: $commit does not define API 2.0" >&2
  exit 1
}
mkdir "$tmp/api" "$tmp/classes"
find "$api" -name '*.java' | LC_ALL=C sort > "$tmp/api-sources"
javac --release 17 -encoding UTF-8 -d "$tmp/api" @"$tmp/api-sources"
find "$kit" -maxdepth 1 -name '*.java' ! -name '*Test.java' | LC_ALL=C sort > "$tmp/kit-sources"
javac --release 17 -encoding UTF-8 -cp "$tmp/api" -d "$tmp/classes" @"$tmp/kit-sources"
find "$tmp/classes" -exec touch -h -d '2026-12-07T15:40:00Z' {} +
jar --create --date=2026-12-07T15:40:00Z --file "$tmp/plugin-kit-2.0.jar" -C "$tmp/classes" .
mv "$tmp/plugin-kit-2.0.jar" "$here/plugin-kit-2.0.jar"
sha256sum "$here/plugin-kit-2.0.jar"
