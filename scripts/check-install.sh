#!/usr/bin/env bash
# Installs a build tree into a scratch prefix and proves that a program can
# use the installed zring the two documented ways:
#   - pkg-config (shared, and static by linking libzring.a),
#   - CMake find_package(zring) (zring::zring and zring::zring_static).
# Also checks the installed file set: public headers only, no internal ones.
# Usage: scripts/check-install.sh BUILD_DIR
set -euo pipefail

build=$(realpath "${1:?usage: check-install.sh BUILD_DIR}")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix

cmake --install "$build" --prefix "$prefix" >"$work/install.log" ||
	{ cat "$work/install.log"; exit 1; }

fail() { echo "check-install: $*" >&2; exit 1; }

for f in include/zring.h include/zring/error.h include/zring/zmtp.h include/zring/export.h; do
	[[ -f $prefix/$f ]] || fail "$f not installed"
done
[[ -z $(find "$prefix/include" -name '*.h' ! -path '*/include/zring.h' ! -path '*/include/zring/*') ]] ||
	fail "unexpected headers installed: $(find "$prefix/include" -name '*.h')"
if [[ -x $build/tools/zring ]]; then
	[[ -x $prefix/bin/zring ]] || fail "bin/zring not installed"
	"$prefix/bin/zring" version >/dev/null || fail "installed bin/zring does not run"
	echo "ok  bin/zring runs"
fi
pc=$(find "$prefix" -name zring.pc)
[[ -n $pc ]] || fail "zring.pc not installed"
libdir=$(dirname "$(dirname "$pc")")
[[ -f $libdir/libzring.a && -L $libdir/libzring.so && -L $libdir/libzring.so.0 ]] ||
	fail "libzring.so / .so.0 / .a missing in $libdir"

# The consumer: the umbrella header, one codec call, one error-text call, one
# CURVE key derivation (libsodium), and a reference to the socket API, so a
# static link must resolve the codec's and the engine's dependencies
# (libsodium, liburing, threads) too. It does not open a context: that
# needs io_uring, which a container may forbid; the tests cover it.
mkdir -p "$work/consumer"
cat >"$work/consumer/main.c" <<'C'
#include <zring.h>
#include <stdio.h>
#include <string.h>

int
main(void)
{
	int (*volatile ctx_new)(zr_ctx **) = zr_ctx_new;
	uint8_t g[ZR_ZMTP_GREETING_SIZE];
	char pub[ZR_CURVE_KEY_Z85_LEN + 1];

	if (zr_zmtp_greeting_encode(g, 1, ZR_MECH_NULL, false) != ZR_ZMTP_GREETING_SIZE)
		return 1;
	if (ctx_new == NULL)
		return 1;
	/* libzmq's test server pair: the public key derived from the secret. */
	if (zr_curve_public(pub, "JTKVSB%%)wK0E.X)V>+}o?pNmC{O&4W4b!Ni{Lh6") != 0 ||
	    strcmp(pub, "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7") != 0)
		return 1;
	printf("%s %u %s\n", zr_socktype_name(ZR_PUSH), g[0], strlen(zr_strerror(-ZR_ETOOLARGE)) ? "ok" : "");
	return 0;
}
C
expected="PUSH 255 ok"

check_run() { # LABEL PROGRAM
	local out
	out=$(LD_LIBRARY_PATH="$libdir" "$2") || fail "$1: consumer exited non-zero"
	[[ $out == "$expected" ]] || fail "$1: printed '$out', expected '$expected'"
	echo "ok  $1"
}

# pkg-config finds zring in the scratch prefix (and its dependencies, such
# as liburing, where the system keeps them).
export PKG_CONFIG_PATH=$libdir/pkgconfig
[[ $(pkg-config --modversion zring) == "$(sed -n 's/^Version: //p' "$pc")" ]] || fail "pkg-config cannot read zring.pc"
# shellcheck disable=SC2046
cc -std=c11 -Wall -Werror $(pkg-config --cflags zring) "$work/consumer/main.c" \
	$(pkg-config --libs zring) -o "$work/pc-shared"
# ldd's output is read whole first: with pipefail, `ldd | grep -q` fails
# whenever grep exits on its match before ldd has finished writing (SIGPIPE).
needed=$(LD_LIBRARY_PATH="$libdir" ldd "$work/pc-shared")
grep -q "$libdir/libzring.so.0" <<<"$needed" || fail "pkg-config consumer is not linked to libzring.so.0"
check_run "pkg-config, shared" "$work/pc-shared"
# shellcheck disable=SC2046
cc -std=c11 -Wall -Werror $(pkg-config --cflags zring) "$work/consumer/main.c" \
	"$libdir/libzring.a" $(pkg-config --static --libs-only-l zring | sed 's/-lzring//') -o "$work/pc-static"
needed=$(LD_LIBRARY_PATH="$libdir" ldd "$work/pc-static")
grep -q libzring <<<"$needed" && fail "static pkg-config consumer still needs libzring.so"
check_run "pkg-config, static" "$work/pc-static"

# find_package: one consumer project, both imported targets.
cat >"$work/consumer/CMakeLists.txt" <<'CM'
cmake_minimum_required(VERSION 3.25)
project(zring_consumer LANGUAGES C)
find_package(zring 0.1 REQUIRED)
add_executable(shared main.c)
target_link_libraries(shared PRIVATE zring::zring)
add_executable(static main.c)
target_link_libraries(static PRIVATE zring::zring_static)
CM
cmake -S "$work/consumer" -B "$work/consumer/build" -G Ninja -DCMAKE_C_COMPILER=cc \
	-DCMAKE_PREFIX_PATH="$prefix" >"$work/cmake.log" 2>&1 || { cat "$work/cmake.log"; fail "find_package(zring) failed"; }
cmake --build "$work/consumer/build" >"$work/build.log" 2>&1 || { cat "$work/build.log"; fail "find_package consumer did not build"; }
check_run "find_package, zring::zring" "$work/consumer/build/shared"
check_run "find_package, zring::zring_static" "$work/consumer/build/static"
echo "check-install: all consumers work"
