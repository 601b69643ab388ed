#!/usr/bin/env bash
# Style lint, a step of scripts/test.sh (so of CI): clang-format drift in any
# C file, shellcheck warnings in the scripts, and clang-tidy findings (the
# checks in .clang-tidy) for the library sources. Exits non-zero when any of
# them reports something. ZR_JOBS (default 2) clang-tidy processes at once.
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
printf '%s\0' "${lib_sources[@]}" |
	xargs -0 -n 1 -P "${ZR_JOBS:-2}" clang-tidy -p "$build" --quiet 2>/dev/null |
	grep -E 'warning:|error:' && rc=1
exit $rc
