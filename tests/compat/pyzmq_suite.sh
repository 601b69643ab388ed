#!/usr/bin/env bash
# pyzmq's own test suite against a libzmq.so.5: the drop-in (compat/) or,
# with --system, whatever the dynamic linker finds (the system's libzmq).
#
# Debian's python3-zmq ships its tests in its package folder (zmq/tests/);
# they are copied to a scratch folder and run with pytest (python3-pytest,
# python3-pytest-timeout, python3-tornado) under LD_LIBRARY_PATH=<the drop-in's folder>, after a
# check that pyzmq really loads the drop-in from there.
#
# Verdict: every test must pass or skip, except those listed in the known
# failures file (one pytest node id a line, '#' comments: each is a
# documented departure, see compat/README.md). A listed test that passes is
# reported, so the list only shrinks. An unexpected failure is printed with
# its traceback and captured output, then run once more on its own: a test
# that passes then is reported FLAKY and does not fail the run.
#
# A drop-in built with AddressSanitizer runs with --preload <the sanitizer's
# shared runtime> (Python itself is not instrumented; its own leaks at exit
# are not checked: detect_leaks=0). A sanitizer report aborts Python, which
# fails the run.
#
# Usage: pyzmq_suite.sh [--lib DIR | --system] [--python PY] [--known FILE]
#                       [--preload LIB] [--deselect FILE] [--keep]
#                       [--tests DIR] [-- PYTEST-ARGS...]
# --known FILE (may repeat): known failures, the files read together.
# --deselect FILE: node ids (one a line, '#' comments) not to run.
# --tests DIR: run DIR's tests instead of pyzmq's (the harness's own test,
#   tests/compat/pyzmq_harness_test.sh).
# Exit: 0 as expected, 1 unexpected failures, 77 pyzmq's tests not installed.
set -euo pipefail

lib=
system=0
python=/usr/bin/python3
known=()
preload=
deselect=()
keep=0
tests=
while (($#)); do
	case $1 in
	--lib) lib=$(realpath "$2"); shift 2 ;;
	--system) system=1; shift ;;
	--python) python=$2; shift 2 ;;
	--known) known+=("$(realpath "$2")"); shift 2 ;;
	--preload) preload=$2; shift 2 ;;
	--deselect)
		while read -r id; do
			id=${id%%#*}
			id=${id//[[:space:]]/}
			[[ -n $id ]] && deselect+=(--deselect "$id")
		done <"$2"
		shift 2 ;;
	--keep) keep=1; shift ;;
	--tests) tests=$(realpath "$2"); shift 2 ;;
	--) shift; break ;;
	*) echo "pyzmq_suite.sh: unknown argument $1" >&2; exit 2 ;;
	esac
done
[[ -n $lib || $system == 1 ]] || { echo "pyzmq_suite.sh: --lib DIR or --system" >&2; exit 2; }

pkg=$("$python" -c 'import os, zmq; print(os.path.dirname(zmq.__file__))') ||
	{ echo "pyzmq_suite.sh: $python cannot import zmq (install python3-zmq)" >&2; exit 1; }
tests=${tests:-$pkg/tests}
if [[ ! -d $tests ]]; then
	echo "pyzmq_suite.sh: $tests not there: this pyzmq ships no tests" >&2
	exit 77
fi
"$python" -c 'import pytest, pytest_timeout, tornado' 2>/dev/null ||
	{ echo "pyzmq_suite.sh: needs python3-pytest, python3-pytest-timeout and python3-tornado (scripts/deps.sh)" >&2; exit 1; }

work=$(mktemp -d)
if ((keep)); then
	echo "pyzmq_suite.sh: scratch folder $work kept"
else
	trap 'rm -rf "$work"' EXIT
fi
cp -r "$tests" "$work/tests"

env_run=(env -u LD_PRELOAD)
if ((system)); then
	env_run+=(-u LD_LIBRARY_PATH)
else
	env_run+=("LD_LIBRARY_PATH=$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
fi
if [[ -n $preload ]]; then
	# Reports to files: pytest captures stderr, and a report aborts Python
	# before pytest could show what it captured.
	env_run+=("LD_PRELOAD=$preload"
		"ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0:log_path=$work/sanitizer"
		"UBSAN_OPTIONS=print_stacktrace=1:log_path=$work/sanitizer${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}")
fi

# Which libzmq pyzmq's compiled backend really maps.
loaded=$("${env_run[@]}" "$python" -c '
import zmq, zmq.backend.cython.socket
print(next(l.split()[-1] for l in open("/proc/self/maps") if "libzmq" in l))')
echo "pyzmq $("$python" -c 'import zmq; print(zmq.pyzmq_version())') on $loaded" \
	"(zmq_version $("${env_run[@]}" "$python" -c 'import zmq; print(zmq.zmq_version())'))"
if ((!system)) && [[ $(dirname "$(realpath "$loaded")") != "$lib" ]]; then
	echo "pyzmq_suite.sh: pyzmq loaded $loaded, not the drop-in in $lib" >&2
	exit 1
fi

cd "$work"
set +e
# A test that hangs (waiting for a message that never comes) fails after
# 60 s instead of stopping the suite.
"${env_run[@]}" "$python" -m pytest -q -p no:cacheprovider --timeout=60 \
	-o junit_logging=all --junitxml="$work/report.xml" "${deselect[@]}" "$@" tests >"$work/pytest.log" 2>&1
set -e
tail -n 3 "$work/pytest.log"
if compgen -G "$work/sanitizer.*" >/dev/null || [[ ! -s $work/report.xml ]]; then
	cat "$work"/sanitizer.* >&2 2>/dev/null || true
	echo "pyzmq_suite.sh: the run did not complete (a sanitizer report or a crash)" >&2
	exit 1
fi

# The verdict: writes the unexpected failures' node ids to $work/unexpected.
set +e
"$python" - "$work/report.xml" "$work/unexpected" "${known[@]}" <<'PY'
import sys
import xml.etree.ElementTree as ET

report, out, known_paths = sys.argv[1], sys.argv[2], sys.argv[3:]
known = {}
for known_path in known_paths:
    for line in open(known_path):
        line = line.split("#", 1)[0].strip()
        if line:
            known[line] = True
passed, skipped, failed = [], [], []
details = {}
for case in ET.parse(report).iter("testcase"):
    path = case.get("classname", "").replace(".", "/")
    # junit: classname "tests.test_x.TestY", name "test_z" -> tests/test_x.py::TestY::test_z
    parts = case.get("classname", "").split(".")
    mod = [p for p in parts if p.startswith("test_")][:1]
    idx = parts.index(mod[0]) if mod else len(parts) - 1
    node = "/".join(parts[: idx + 1]) + ".py"
    node += "".join("::" + p for p in parts[idx + 1 :]) + "::" + case.get("name")
    kinds = {child.tag for child in case}
    if kinds & {"failure", "error"}:
        failed.append(node)
        # What pytest saw: the message, the traceback's last lines and the
        # test's captured output (a flaky failure is diagnosed from the CI
        # log alone).
        text = []
        for child in case:
            if child.tag in ("failure", "error"):
                text.append(f"{child.tag}: {child.get('message', '')}")
                text += (child.text or "").rstrip().splitlines()[-30:]
            elif child.tag in ("system-out", "system-err"):
                lines = [l for l in (child.text or "").splitlines()
                         if l.strip() and not l.startswith("-----")]
                if lines:
                    text.append(f"{child.tag}:")
                    text += lines[-20:]
        details[node] = text
    elif "skipped" in kinds:
        skipped.append(node)
    else:
        passed.append(node)
print(f"passed {len(passed)}, skipped {len(skipped)}, failed {len(failed)}"
      f" (known {sum(1 for f in failed if f in known)})")
unexpected = [f for f in failed if f not in known]
fixed = [k for k in known if k in passed]
for f in unexpected:
    print("UNEXPECTED FAILURE", f)
    for line in details[f]:
        print("    " + line)
for f in fixed:
    print("now passes (remove from the known list):", f)
with open(out, "w") as fh:
    fh.writelines(f + "\n" for f in unexpected)
sys.exit(1 if unexpected else 0)
PY
verdict=$?
set -e
if ((verdict == 0)) || [[ ! -s $work/unexpected ]]; then
	exit "$verdict"
fi

# Each unexpected failure runs once more, alone in a fresh Python: one that
# passes then is reported as FLAKY (its first failure is printed above, for
# the record) and does not fail the run; one that fails again does.
mapfile -t again <"$work/unexpected"
set +e
"${env_run[@]}" "$python" -m pytest -q -p no:cacheprovider --timeout=60 \
	"${again[@]}" >"$work/rerun.log" 2>&1
rerun=$?
set -e
if ((rerun == 0)); then
	for f in "${again[@]}"; do
		echo "FLAKY (failed, then passed on its own): $f"
	done
	exit 0
fi
tail -n 3 "$work/rerun.log"
echo "pyzmq_suite.sh: failed again on its own: ${again[*]}" >&2
exit 1
