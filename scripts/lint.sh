#!/usr/bin/env bash
# Style lint, kept out of CI's pass/fail for now (see README): clang-format
# drift, shellcheck warnings in the scripts, and clang-tidy findings for the
# library sources. Exits non-zero when any of them reports something.
# Usage: scripts/lint.sh [BUILD_DIR]   (default build/gcc; needs compile_commands.json)
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
build=${1:-build/gcc}
rc=0

mapfile -t sources < <(git ls-files -- '*.c' '*.h')
echo "== clang-format ($(clang-format --version | grep -oE '[0-9]+\.[0-9.]+' | head -1))"
drift=0
for f in "${sources[@]}"; do
	if ! clang-format --dry-run --Werror "$f" >/dev/null 2>&1; then
		echo "  needs formatting: $f"
		drift=$((drift + 1))
	fi
done
((drift)) && { echo "  $drift file(s); fix with: clang-format -i FILE"; rc=1; }

echo "== shellcheck"
shellcheck -S warning scripts/*.sh .ci/run || rc=1

echo "== clang-tidy"
if [[ ! -f $build/compile_commands.json ]]; then
	echo "  no $build/compile_commands.json: configure a build first (scripts/test.sh does)"
	exit 1
fi
mapfile -t lib_sources < <(git ls-files -- 'zmtp/*.c' 'io/*.c' 'engine/*.c')
clang-tidy -p "$build" --quiet "${lib_sources[@]}" 2>/dev/null | grep -E 'warning:|error:' && rc=1
exit $rc
