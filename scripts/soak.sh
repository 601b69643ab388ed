#!/usr/bin/env bash
# The fault tests (tests/fault/fault.sh), for longer: every phase (5% loss, a
# 10 s partition, a tbf rate limit, kill -9 of the senders and of the
# receivers, proxy stalls and resets) with PUSH/PULL, Lazy Pirate REQ/REP and
# a broker queue side by side, round after round for N minutes, each phase
# held longer than in CI's short form. Prints a row per phase and pattern
# (sent, received, lost, duplicated, reordered, connection deaths, the loss
# bound of a dead connection, reconnects and their times) and the totals.
#
#   scripts/soak.sh [--minutes N] [--hold SECONDS] [--build DIR]
#
# --minutes (default 10) is a lower bound: the last round runs to its end.
# --hold (default 15) is how long each phase runs before and after its fault.
# --build (default build/gcc) is configured and fault_peer built when needed;
# an ASan build (build/asan) works too. Needs root (network namespaces); the
# ZR_FAULT_* variables of tests/fault/fault.sh change rates and bounds, e.g.
# ZR_FAULT_RATE=0 for unpaced senders. Exit status: 0 all checks held, 1 a
# check failed, 77 skipped (not root).
set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
minutes=10
hold=15
build=build/gcc
while (($#)); do
	case $1 in
	--minutes) minutes=$2; shift 2 ;;
	--hold) hold=$2; shift 2 ;;
	--build) build=$2; shift 2 ;;
	-h | --help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "usage: scripts/soak.sh [--minutes N] [--hold SECONDS] [--build DIR]" >&2; exit 1 ;;
	esac
done
[[ $minutes =~ ^[0-9]+$ && $minutes -ge 1 ]] || { echo "soak.sh: --minutes wants a whole number >= 1" >&2; exit 1; }
[[ $hold =~ ^[0-9]+$ ]] || { echo "soak.sh: --hold wants whole seconds" >&2; exit 1; }

if [[ ! -f $build/build.ninja && ! -f $build/Makefile ]]; then
	mkdir -p "$build"
	cmake -S . -B "$build" -G Ninja -Wno-dev -DCMAKE_C_COMPILER=gcc \
		-DCMAKE_BUILD_TYPE=RelWithDebInfo -DZR_SANITIZER= >"$build.configure.log" 2>&1 ||
		{ cat "$build.configure.log"; exit 1; }
fi
cmake --build "$build" --target fault_peer >/dev/null || exit 1
python=$(sed -n 's/^ZR_PYTHON:[A-Z]*=//p' "$build/CMakeCache.txt")
exec tests/fault/fault.sh --peer "$build/tests/fault/fault_peer" --python "${python:-python3}" \
	--minutes "$minutes" --hold "$hold"
