#!/usr/bin/env bash
# Installs the Debian 12 packages zring needs to build, test and fuzz.
# Idempotent: asks dpkg first and runs apt-get only when something is missing.
# Run as root (or with sudo available). Quiet when everything is present.
set -euo pipefail

# Recommends are skipped, so every package that is really used is listed.
packages=(
	# build
	cmake ninja-build gcc libc6-dev clang pkg-config liburing-dev libsodium-dev libssl-dev
	# tests: the openssl command makes the TLS tests' certificates and is their
	# reference peer (s_client, s_server)
	openssl
	# tests: stunnel, the way libzmq users put TLS in front of a socket today
	# (a pyzmq peer through it into a zring tls:// endpoint)
	stunnel4
	# tests: Criterion, libzmq and pyzmq as the real peers, valgrind
	libcriterion-dev libzmq3-dev python3-zmq valgrind
	# pyzmq's own test suite on the libzmq.so.5 drop-in (tests/compat/pyzmq_suite.sh)
	python3-pytest python3-pytest-timeout python3-tornado
	# fault tests (tests/fault): ip netns, veth and tc tbf; iptables for loss
	# and partitions
	iproute2 iptables
	# fuzzing and sanitizers with clang: libFuzzer and the sanitizer runtimes
	# (libclang_rt.fuzzer-x86_64.a), llvm-symbolizer for readable reports
	libclang-rt-14-dev llvm
	# lint (scripts/lint.sh)
	clang-format clang-tidy shellcheck
)

missing=()
for p in "${packages[@]}"; do
	status=$(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null || true)
	[[ "$status" == ii* ]] || missing+=("$p")
done
((${#missing[@]} == 0)) && exit 0

echo "deps.sh: installing ${missing[*]}" >&2
sudo=()
if ((EUID != 0)); then
	command -v sudo >/dev/null || { echo "deps.sh: run as root (need: ${missing[*]})" >&2; exit 1; }
	sudo=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
