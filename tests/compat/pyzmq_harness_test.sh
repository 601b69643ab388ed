#!/usr/bin/env bash
# The pyzmq suite's harness (pyzmq_suite.sh) on a suite of its own making,
# whose verdicts are known: a pass, a skip, known failures (one in a class,
# one parametrized), a test that fails once and then passes (FLAKY: the run
# passes), one that always fails (the run fails, after its rerun), and a
# known failure that now passes (reported). Checks the exit codes and the
# lines a CI log is read by, and that pytest's node ids are rebuilt right
# from the junit report (a wrong one would make every rerun fail).
#
# Usage: pyzmq_harness_test.sh --lib DIR [--python PY]
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
args=("$@")
python=/usr/bin/python3
while (($#)); do
	case $1 in
	--python) python=$2; shift 2 ;;
	*) shift ;;
	esac
done
"$python" -c 'import zmq, pytest, pytest_timeout, tornado' 2>/dev/null || {
	echo "pyzmq_harness_test.sh: $python lacks zmq or pytest (scripts/deps.sh)" >&2
	exit 77
}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/suite"
cat >"$work/suite/test_fake.py" <<'PY'
import os

import pytest

MARK = os.environ["ZR_HARNESS_MARK"]


def test_passes():
    pass


def test_skips():
    pytest.skip("skipped on purpose")


@pytest.mark.parametrize("n", [1, 2])
def test_known_param(n):
    assert n == 1, "a documented departure"


class TestGroup:
    def test_known(self):
        assert os.environ.get("ZR_HARNESS_FIXED") == "1", "a documented departure"

    def test_flaky(self):
        if not os.path.exists(MARK):
            open(MARK, "w").close()
            print("first run: failing on purpose")
            assert False, "flaky on purpose"

    def test_broken(self):
        assert os.environ.get("ZR_HARNESS_BROKEN") != "1", "broken on purpose"
PY
cat >"$work/known" <<'EOF'
# the two departures of the fake suite
tests/test_fake.py::test_known_param[2]
tests/test_fake.py::TestGroup::test_known
EOF

failures=0
# run NAME WANT-EXIT ENV... : the harness on the fake suite, its output in
# $work/NAME.out.
run() {
	local name=$1 want=$2 rc
	shift 2
	rm -f "$work/mark"
	set +e
	env ZR_HARNESS_MARK="$work/mark" "$@" "$here/pyzmq_suite.sh" "${args[@]}" \
		--tests "$work/suite" --known "$work/known" >"$work/$name.out" 2>&1
	rc=$?
	set -e
	if ((rc != want)); then
		echo "FAIL $name: exit $rc, want $want"
		sed 's/^/    /' "$work/$name.out"
		failures=$((failures + 1))
		return 1
	fi
}
# expect NAME TEXT : a line of NAME's output holds TEXT.
expect() {
	if ! grep -qF -- "$2" "$work/$1.out"; then
		echo "FAIL $1: no line with: $2"
		sed 's/^/    /' "$work/$1.out"
		failures=$((failures + 1))
	fi
}
refuse() {
	if grep -qF -- "$2" "$work/$1.out"; then
		echo "FAIL $1: a line with: $2"
		sed 's/^/    /' "$work/$1.out"
		failures=$((failures + 1))
	fi
}

# A flaky test: printed with its captured output, rerun, and the run passes.
if run flaky 0; then
	expect flaky "passed 3, skipped 1, failed 3 (known 2)"
	expect flaky "UNEXPECTED FAILURE tests/test_fake.py::TestGroup::test_flaky"
	expect flaky "flaky on purpose"
	expect flaky "first run: failing on purpose"
	expect flaky "FLAKY (failed, then passed on its own): tests/test_fake.py::TestGroup::test_flaky"
	refuse flaky "UNEXPECTED FAILURE tests/test_fake.py::test_known_param"
	refuse flaky "failed again"
fi

# A test that fails on its rerun too fails the run; the flaky one beside it
# is rerun with it (and passes), which does not save the run.
if run broken 1 ZR_HARNESS_BROKEN=1; then
	expect broken "UNEXPECTED FAILURE tests/test_fake.py::TestGroup::test_broken"
	expect broken "broken on purpose"
	expect broken "failed again on its own:"
	expect broken "tests/test_fake.py::TestGroup::test_broken"
	refuse broken "FLAKY"
fi

# A known failure that passes now is named, so the list only shrinks.
if run fixed 0 ZR_HARNESS_FIXED=1; then
	expect fixed "now passes (remove from the known list): tests/test_fake.py::TestGroup::test_known"
fi

# No known list at all: the departures are unexpected, and fail again.
rm -f "$work/known"
touch "$work/known"
if run unknown 1; then
	expect unknown "UNEXPECTED FAILURE tests/test_fake.py::test_known_param[2]"
	expect unknown "failed again on its own:"
fi

if ((failures)); then
	echo "pyzmq_harness_test.sh: $failures checks failed"
	exit 1
fi
echo "pyzmq_harness_test.sh: the harness's verdicts hold (4 runs)"
