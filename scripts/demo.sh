#!/usr/bin/env bash
# README command 1: install the Debian packages, build zring (Release) into
# build/release, and run the demo: `zring demo` is backpressure end to end (a
# slow subscriber holds a fast publisher back through TCP, memory stays
# bounded, nothing is lost; `--quick` for a short run). The codec self-check
# against a real libzmq peer (pyzmq) is `zring probe --self`.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

scripts/deps.sh
cmake -S . -B build/release -G Ninja -Wno-dev -DCMAKE_BUILD_TYPE=Release -DZR_TESTS=OFF >/dev/null
cmake --build build/release -j "${ZR_JOBS:-2}"
exec build/release/tools/zring demo "$@"
