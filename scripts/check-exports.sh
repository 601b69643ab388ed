#!/usr/bin/env bash
# Checks the dynamic symbol table of libzring.so against the public headers:
#   - every exported symbol is public API (zr_ followed by a letter; no
#     zr__ internals, nothing from another namespace);
#   - every function the headers declare with ZR_API is exported.
# Usage: scripts/check-exports.sh path/to/libzring.so path/to/include
set -euo pipefail

lib=${1:?usage: check-exports.sh LIBZRING_SO INCLUDE_DIR}
inc=${2:?usage: check-exports.sh LIBZRING_SO INCLUDE_DIR}

exported=$(nm -D --defined-only "$lib" | awk '$2 != "A" { sub(/@.*/, "", $3); print $3 }' | sort -u)
declared=$(grep -rhE '^ZR_API ' "$inc" | sed -nE 's/^ZR_API [^(]*\b(zr_[a-z0-9_]+)\(.*/\1/p' | sort -u)

status=0
stray=$(grep -vE '^zr_[a-z]' <<<"$exported" || true)
if [[ -n "$stray" ]]; then
	echo "exported but not public API:" >&2
	sed 's/^/  /' <<<"$stray" >&2
	status=1
fi
missing=$(comm -23 <(echo "$declared") <(echo "$exported"))
if [[ -n "$missing" ]]; then
	echo "declared with ZR_API but not exported by $lib:" >&2
	sed 's/^/  /' <<<"$missing" >&2
	status=1
fi
undeclared=$(comm -13 <(echo "$declared") <(echo "$exported"))
if [[ -n "$undeclared" ]]; then
	echo "exported but declared in no public header:" >&2
	sed 's/^/  /' <<<"$undeclared" >&2
	status=1
fi
if ((status == 0)); then
	echo "$(wc -l <<<"$exported") symbols exported, all declared in $inc"
fi
exit $status
