#!/usr/bin/env bash
# Memcheck over zring (test.sh's step "valgrind"; needs the build's tests and
# benchmarks, so a build with ZR_BENCH=ON such as test.sh's build/gcc):
#   - a native PUSH/PULL pair over tcp:// (bench_zr), both processes under
#     valgrind: the io thread, the handoff rings, the ZMTP codec; and the
#     same pair on CURVE (handshake, and a box per message);
#   - the libzmq drop-in: bench_zmqapi, a program built against zmq.h and
#     the system's libzmq, run on compat/'s libzmq.so.5 (LD_LIBRARY_PATH), as
#     a libzmq user would run their own program under valgrind;
#   - the Criterion suites named below (Criterion runs each test in a child
#     it executes: traced; the Python and libzmq peers some tests start are
#     system programs and are not).
# Errors and definite leaks fail it: with -q valgrind writes nothing else,
# so every process's log must stay empty. Also fails when a command fails.
# zring must have been built with valgrind's headers (scripts/deps.sh
# installs them): without, its io thread would sleep where valgrind cannot
# switch threads (io/loop.c), and the run would stop at the time limit.
#
# Usage: scripts/valgrind.sh [BUILD_DIR]   (default build/gcc)
set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
dir=${1:-build/gcc}
limit=${ZR_VALGRIND_LIMIT_S:-600} # per command; a hang fails, never blocks CI

# The suites: the io loop (its polled wait too), and engine paths the native
# pair does not take: inproc, ZAP, monitors, readiness, heartbeats, the
# caller's thread running the io, backpressure; and the zmq.h layer. Chosen
# for what they cover per second: under valgrind every test is a new
# process of its own (about 0.5 s each), libsodium and OpenSSL are slow, and
# the whole step takes about 2-3 minutes. The codec alone is ASan's and the
# fuzzers' (its suites pass under valgrind too, at 1-2 minutes each).
suites=(io_loop engine_flow engine_inproc engine_zap engine_monitor engine_readiness
	engine_heartbeat engine_caller_io engine_backpressure compat_api)

command -v valgrind >/dev/null || {
	echo "valgrind is not installed (scripts/deps.sh installs it)"
	exit 1
}
for f in "$dir/bench/bench_zr" "$dir/bench/bench_zmqapi" "$dir/compat/libzmq.so.5"; do
	[[ -e $f ]] || {
		echo "$f missing: build $dir with -DZR_BENCH=ON first"
		exit 1
	}
done
logs=$(mktemp -d) || exit 1
vg=(valgrind -q --error-exitcode=97 --leak-check=full --show-leak-kinds=definite
	--errors-for-leak-kinds=definite --trace-children=yes
	"--trace-children-skip=/usr/*,/bin/*")
failed=()

# vgrun NAME COMMAND...: the command under valgrind, its logs in $logs/NAME.*
vgrun() {
	local name=$1
	shift
	timeout -s KILL "$limit" "${vg[@]}" "--log-file=$logs/$name.%p.vg" "$@" \
		>"$logs/$name.out" 2>&1
}

# pair NAME LIBDIR BINARY PATTERN: a receiver and a sender of 20,000
# messages of 64 B over tcp://, both under valgrind; LIBDIR ("" for none)
# goes first on the library path. A CURVE receiver says its public key after
# its endpoint ("READY <endpoint> <key>"), and the sender takes it last.
pair() {
	local name=$1 lib=$2 bin=$3 pat=$4 ep="" key="" rc=0 pid
	local env=(env ${lib:+"LD_LIBRARY_PATH=$lib"})
	"${env[@]}" "${vg[@]}" "--log-file=$logs/$name-recv.%p.vg" \
		"$bin" thr-recv "$pat" tcp://127.0.0.1:0 20000 64 >"$logs/$name-recv.out" 2>&1 &
	pid=$!
	for _ in $(seq 600); do
		ep=$(sed -n 's/^READY \([^ ]*\).*/\1/p' "$logs/$name-recv.out")
		key=$(sed -n 's/^READY [^ ]* \(.*\)/\1/p' "$logs/$name-recv.out")
		[[ -n $ep ]] && break
		sleep 0.1
	done
	if [[ -z $ep ]]; then
		echo "$name: the receiver never said READY"
		kill -9 "$pid" 2>/dev/null
		return 1
	fi
	timeout -s KILL "$limit" "${env[@]}" "${vg[@]}" "--log-file=$logs/$name-send.%p.vg" \
		"$bin" thr-send "$pat" "$ep" 20000 64 ${key:+"$key"} >"$logs/$name-send.out" 2>&1 || rc=1
	wait "$pid" || rc=1
	grep -h '^RESULT' "$logs/$name"-*.out | cut -c1-110
	return $rc
}

check() {
	local name=$1
	shift
	local t0=$SECONDS
	if "$@"; then
		echo "ran   $name ($((SECONDS - t0))s)"
	else
		echo "FAIL  $name ($((SECONDS - t0))s): exit status"
		failed+=("$name")
	fi
}

check native-pair pair native "" "$dir/bench/bench_zr" pushpull
check curve-pair pair curve "" "$dir/bench/bench_zr" pushpull-curve
check drop-in-pair pair dropin "$dir/compat" "$dir/bench/bench_zmqapi" pushpull
if ! grep -q 'zring=1' "$logs/dropin-recv.out" || ! grep -q 'zring=1' "$logs/dropin-send.out"; then
	echo "FAIL  drop-in-pair: did not run on zring's libzmq.so.5"
	failed+=(drop-in-lib)
fi
# Two suites at a time (the machine's two cores); each is judged below, by
# its output and its valgrind logs.
for s in "${suites[@]}"; do
	(
		t0=$SECONDS
		vgrun "$s" "$dir/tests/test_$s"
		echo "ran   $s (exit $?, $((SECONDS - t0))s)"
	) &
	(($(jobs -rp | wc -l) >= 2)) && wait -n
done
wait
# Each suite must have run tests and passed them all.
for s in "${suites[@]}"; do
	if ! grep -q 'Synthesis: Tested: [1-9][0-9]* | Passing: [0-9]* | Failing: 0 | Crashing: 0' \
		"$logs/$s.out"; then
		echo "FAIL  $s:"
		tail -n 30 "$logs/$s.out"
		failed+=("$s")
	fi
done

for f in "$logs"/*.vg; do
	if [[ -s $f ]]; then
		echo "---- valgrind: $(basename "$f")"
		head -n 60 "$f"
		failed+=("$(basename "$f")")
	fi
done
n=$(find "$logs" -name '*.vg' | wc -l)
if ((${#failed[@]} > 0)); then
	echo "valgrind.sh: FAILED: ${failed[*]} (logs in $logs)"
	exit 1
fi
echo "valgrind.sh: clean ($n processes under memcheck)"
rm -rf "$logs"
