#!/usr/bin/env bash
# The whole check, as CI runs it (README command 2):
#   1. Debian packages (scripts/deps.sh)
#   2. header guards (scripts/check-guards.sh)
#   3. gcc build, -Werror, -O2, benchmarks too, and every CTest test -> build/gcc
#   4. lint (scripts/lint.sh): clang-format of every C file, shellcheck,
#      clang-tidy of the library sources (uses build/gcc's compile commands)
#   5. clang build with ASan+UBSan, -Werror, and every test       -> build/asan
#   6. clang build with TSan, -Werror: tests/tsan/ stress programs -> build/tsan
#      (Criterion cannot start under TSan)
#   7. libFuzzer build; each harness runs a few seconds           -> build/fuzz
#   8. install to a scratch prefix; consumers built with pkg-config and
#      find_package(zring), shared and static, must run
#   9. clang build with -DZR_TLS=OFF (no OpenSSL), -Werror; its build tests
#      (tls:// refused, libssl not mapped) and the TLS tests' skip  -> build/notls
#  10. valgrind's memcheck over build/gcc (scripts/valgrind.sh): a native
#      pair and the zmq.h drop-in over tcp://, and a set of the suites
# Every step runs even when an earlier one failed; the last line says what
# failed, and the exit status is non-zero if anything did.
#
# Environment: ZR_JOBS (default 2), ZR_FUZZ_SECONDS per harness (default 5),
# ZR_CLEAN=1 to start from empty build directories.
set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
root=$PWD
jobs=${ZR_JOBS:-2}
fuzz_seconds=${ZR_FUZZ_SECONDS:-5}

export ASAN_OPTIONS=halt_on_error=1:print_stacktrace=1:detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
export LSAN_OPTIONS=print_suppressions=0
export CTEST_OUTPUT_ON_FAILURE=1

results=()
failed=()
t_start=$SECONDS

# step NAME COMMAND...: runs one step, records PASS/FAIL and its duration.
step() {
	local name=$1 t0=$SECONDS rc
	shift
	printf '\n==== %s\n' "$name"
	"$@"
	rc=$?
	if ((rc == 0)); then
		results+=("$(printf 'PASS  %-8s %4ds' "$name" $((SECONDS - t0)))")
	else
		results+=("$(printf 'FAIL  %-8s %4ds  (exit %d)' "$name" $((SECONDS - t0)) "$rc")")
		failed+=("$name")
	fi
}

# build DIR CMAKE-ARGS...: configure (Ninja), build, run the tests.
build_and_test() {
	local dir=$1
	shift
	[[ ${ZR_CLEAN:-0} == 1 ]] && rm -rf "$dir"
	cmake -S "$root" -B "$dir" -G Ninja -Wno-dev "$@" >"$dir.configure.log" 2>&1 ||
		{ cat "$dir.configure.log"; return 1; }
	cmake --build "$dir" -j "$jobs" || return 1
	ctest --test-dir "$dir" -j "$jobs" --output-on-failure --no-tests=error
}

gcc_build() {
	mkdir -p build
	# ZR_BENCH: the benchmarks must build, and their smoke test checks exact
	# message counts (never a rate).
	build_and_test build/gcc -DCMAKE_C_COMPILER=gcc -DCMAKE_BUILD_TYPE=RelWithDebInfo \
		-DZR_WERROR=ON -DZR_SANITIZER= -DZR_BENCH=ON
}

asan_build() {
	mkdir -p build
	build_and_test build/asan -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=Debug \
		-DCMAKE_C_FLAGS_DEBUG="-g -O1" -DZR_WERROR=ON "-DZR_SANITIZER=address;undefined"
}

# ThreadSanitizer: app threads, io threads and broker threads racing over
# tcp:// and ipc:// (tests/tsan/, zring.tsan.*; each checks exact counts).
# Only those programs and what they link are built: -DZR_SANITIZER=thread
# registers no Criterion test, and the fuzz replays and tool tests the build
# also defines are run by the other steps (-L tsan leaves them out). A TSan
# report fails its test (halt_on_error, and the output is matched for it).
tsan_build() {
	local dir=build/tsan
	mkdir -p build
	[[ ${ZR_CLEAN:-0} == 1 ]] && rm -rf "$dir"
	cmake -S "$root" -B "$dir" -G Ninja -Wno-dev -DCMAKE_C_COMPILER=clang \
		-DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS_DEBUG="-g -O1" -DZR_WERROR=ON \
		-DZR_SANITIZER=thread >"$dir.configure.log" 2>&1 ||
		{ cat "$dir.configure.log"; return 1; }
	cmake --build "$dir" -j "$jobs" --target zr_tsan || return 1
	ctest --test-dir "$dir" -L tsan -j "$jobs" --output-on-failure --no-tests=error
}

# The build without OpenSSL (-DZR_TLS=OFF, for constrained deployments:
# linking it costs every process ~1.7 MB resident) must keep compiling and
# refuse tls:// cleanly. Only the library, the tools and the tests that say
# something about that build run here; the other steps test the rest.
notls_build() {
	local dir=build/notls
	mkdir -p build
	[[ ${ZR_CLEAN:-0} == 1 ]] && rm -rf "$dir"
	cmake -S "$root" -B "$dir" -G Ninja -Wno-dev -DCMAKE_C_COMPILER=clang \
		-DCMAKE_BUILD_TYPE=RelWithDebInfo -DZR_WERROR=ON -DZR_SANITIZER= -DZR_TLS=OFF \
		>"$dir.configure.log" 2>&1 || { cat "$dir.configure.log"; return 1; }
	cmake --build "$dir" -j "$jobs" || return 1
	ctest --test-dir "$dir" -j "$jobs" -R '^zring\.(tls|build)\.' --output-on-failure --no-tests=error
}

# Builds the libFuzzer harnesses (fuzz_<target>) and runs each for a few
# seconds on its committed corpus. New inputs go to a scratch directory, never
# into the repository; a crash leaves its input in build/fuzz/artifacts/.
fuzz_run() {
	local dir=build/fuzz exe name corpus scratch dict targets rc=0 n=0
	if [[ ! -f fuzz/CMakeLists.txt ]]; then
		echo "no fuzz/CMakeLists.txt: nothing to fuzz"
		return 0
	fi
	mkdir -p build
	[[ ${ZR_CLEAN:-0} == 1 ]] && rm -rf "$dir"
	cmake -S "$root" -B "$dir" -G Ninja -Wno-dev -DCMAKE_C_COMPILER=clang \
		-DCMAKE_BUILD_TYPE=RelWithDebInfo -DZR_WERROR=ON -DZR_TESTS=OFF -DZR_FUZZ=ON \
		"-DZR_SANITIZER=address;undefined" >"$dir.configure.log" 2>&1 ||
		{ cat "$dir.configure.log"; return 1; }
	# Only the harnesses (and what they link): the rest is built and tested
	# by the gcc and asan steps.
	mapfile -t targets < <(ninja -C "$dir" -t targets all |
		sed -n 's|^fuzz/\(fuzz_[A-Za-z0-9_]*\): C_EXECUTABLE_LINKER.*|\1|p')
	if ((${#targets[@]} == 0)); then
		echo "fuzz/CMakeLists.txt defines no fuzz_* executable"
		return 1
	fi
	cmake --build "$dir" -j "$jobs" --target "${targets[@]}" || return 1
	mkdir -p "$dir/artifacts"
	scratch=$(mktemp -d) || return 1
	while IFS= read -r exe; do
		name=$(basename "$exe")
		name=${name#fuzz_}
		corpus=()
		[[ -d fuzz/corpus/$name ]] && corpus=("fuzz/corpus/$name")
		dict=()
		for d in "fuzz/corpus/$name.dict" "fuzz/$name.dict" "fuzz/dict/$name.dict" fuzz/zmtp.dict; do
			[[ -f $d ]] && { dict=("-dict=$d"); break; }
		done
		mkdir -p "$scratch/$name"
		echo "-- fuzz_$name: ${fuzz_seconds}s${corpus:+ from ${corpus[0]}}${dict:+ ${dict[0]}}"
		if ! "$exe" -max_total_time="$fuzz_seconds" -timeout=10 -rss_limit_mb=2048 \
			-artifact_prefix="$dir/artifacts/fuzz_$name-" -print_final_stats=1 \
			"${dict[@]}" "$scratch/$name" "${corpus[@]}" >"$scratch/$name.log" 2>&1; then
			tail -n 60 "$scratch/$name.log"
			echo "fuzz_$name FAILED; reproducer(s) in $dir/artifacts/"
			rc=1
		else
			grep -E '^Done ' "$scratch/$name.log" | sed 's/^/   /'
		fi
		n=$((n + 1))
	done < <(find "$dir/fuzz" -maxdepth 1 -type f -name 'fuzz_*' -perm -u+x | sort)
	rm -rf "$scratch"
	if ((n == 0)); then
		echo "fuzz/CMakeLists.txt built no fuzz_* executable in $dir/fuzz"
		return 1
	fi
	return $rc
}

step deps scripts/deps.sh
step guards scripts/check-guards.sh
step gcc gcc_build
step lint scripts/lint.sh build/gcc
step asan asan_build
step tsan tsan_build
step fuzz fuzz_run
step install scripts/check-install.sh build/gcc
step notls notls_build
step valgrind scripts/valgrind.sh build/gcc

printf '\n==== summary\n'
printf '%s\n' "${results[@]}"
total=$((SECONDS - t_start))
if ((${#failed[@]} == 0)); then
	echo "test.sh: ALL PASSED (${#results[@]} steps, ${total}s)"
	exit 0
fi
echo "test.sh: FAILED: ${failed[*]} (${total}s)"
exit 1
