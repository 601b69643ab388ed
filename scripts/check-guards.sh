#!/usr/bin/env bash
# Header-guard lint: every header's guard is derived from its path, so a
# copied header cannot keep its old guard.
#   include/zring.h        -> ZRING_H        (the umbrella header)
#   include/zring/<x>.h    -> ZR_<X>_H       (public: include/zring/zmtp.h -> ZR_ZMTP_H)
#   <dir>/.../<x>.h        -> ZR_<DIR>_..._<X>_H   (zmtp/wire.h -> ZR_ZMTP_WIRE_H,
#                                                 tests/support/guard.h -> ZR_TESTS_SUPPORT_GUARD_H)
# (letters upper-cased, every other character becomes _). The header must open
# with `#ifndef GUARD` / `#define GUARD` (comments before are fine) and end with
# `#endif`, whose trailing comment, if any, must name GUARD.
# Usage: scripts/check-guards.sh [HEADER...]   (default: every header in the repo)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

guard_for() {
	local p=$1
	case $p in
	include/zring.h) echo ZRING_H ;;
	include/zring/*) p=${p#include/zring/} ;&
	*) p=${p%.h}; p=${p^^}; echo "ZR_${p//[^A-Z0-9]/_}_H" ;;
	esac
}

if (($# > 0)); then
	headers=("$@")
elif git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	mapfile -t headers < <(git ls-files --cached --others --exclude-standard -- '*.h' | sort -u)
else
	mapfile -t headers < <(find . -name '*.h' -not -path './build/*' -printf '%P\n' | sort)
fi

bad=0
declare -A seen=()
for h in "${headers[@]}"; do
	[[ -f $h ]] || continue
	want=$(guard_for "$h")
	# The first two directives and the last non-blank line, comments aside.
	read -r got_ifndef got_define got_endif < <(awk '
		function strip(s) { gsub(/\/\*.*\*\//, "", s); sub(/\/\/.*/, "", s); return s }
		{
			line = $0
			if (incomment) { if (line ~ /\*\//) { sub(/.*\*\//, "", line); incomment = 0 } else next }
			if (line ~ /\/\*/ && line !~ /\*\//) { sub(/\/\*.*/, "", line); incomment = 1 }
			line = strip(line)
			if (line ~ /^[ \t]*$/) next
			if (n < 2 && line ~ /^[ \t]*#/) { d[n++] = line }
			else if (n < 2) { d[n++] = "CODE" }
		}
		/[^ \t]/ { last_raw = $0 }
		END {
			split(d[0], a, /[ \t]+/); split(d[1], b, /[ \t]+/)
			i = (a[1] == "#ifndef") ? a[2] : "-"
			df = (b[1] == "#define") ? b[2] : "-"
			e = "-"
			if (last_raw ~ /^#endif/) {
				e = last_raw
				sub(/^#endif[ \t]*/, "", e); gsub(/\/\*|\*\/|\/\//, "", e); gsub(/[ \t]/, "", e)
				if (e == "") e = "."
			}
			print i, df, e
		}' "$h")
	problems=()
	[[ $got_ifndef == "$want" ]] || problems+=("#ifndef is '$got_ifndef'")
	[[ $got_define == "$want" ]] || problems+=("#define is '$got_define'")
	[[ $got_endif == . || $got_endif == "$want" ]] ||
		problems+=("last line is not '#endif' or '#endif /* $want */' (got '$got_endif')")
	if [[ -n ${seen[$want]:-} ]]; then
		problems+=("guard also used by ${seen[$want]}")
	fi
	seen[$want]=$h
	if ((${#problems[@]})); then
		printf '%s: expected guard %s: %s\n' "$h" "$want" "$(IFS=';'; echo "${problems[*]}")" >&2
		bad=$((bad + 1))
	fi
done

if ((bad)); then
	echo "check-guards: $bad of ${#headers[@]} headers have a guard that does not match their path" >&2
	exit 1
fi
echo "check-guards: ${#headers[@]} headers ok"
