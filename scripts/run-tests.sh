#!/usr/bin/env bash
# Runs every test — the Criterion unit tests (under ASan and UBSan), the
# common_test suites, and throwaway rebar3 and Mix projects that adopt the
# repository as a dependency (scripts/adoption-test.sh) — even when one part fails, then prints one closing
# line, "tests: N passed, M failed, K skipped", and exits non-zero if anything
# failed.
set -uo pipefail
cd "$(dirname "$0")/.."
mkdir -p build
status=0

make --no-print-directory unit 2>&1 | tee build/unit.log
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1

make --no-print-directory ct 2>&1 | tee build/ct.log
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1

rm -rf build/adoption
scripts/adoption-test.sh "$(pwd)/build/adoption" 2>&1 | tee build/adoption.log
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1

# Criterion: "Synthesis: Tested: 10 | Passing: 9 | Failing: 1 | Crashing: 0"
unit_pass=$(sed -n 's/.*Synthesis: Tested: [0-9]* | Passing: \([0-9]*\).*/\1/p' build/unit.log | tail -1)
unit_fail=$(sed -n 's/.*| Failing: \([0-9]*\) | Crashing: \([0-9]*\).*/\1 \2/p' build/unit.log | tail -1)
# common_test: "All 15 tests passed." or "Failed 2 tests. Passed 13 tests."
ct_all=$(sed -n 's/.*All \([0-9]*\) tests passed.*/\1/p' build/ct.log | tail -1)
ct_pass=$(sed -n 's/.*Passed \([0-9]*\) tests.*/\1/p' build/ct.log | tail -1)
ct_fail=$(sed -n 's/.*Failed \([0-9]*\) tests.*/\1/p' build/ct.log | tail -1)
# "Skipped 6 (6, 0) tests.": cases skipped, e.g. the partition suite where no
# network namespace can be made; said, never passed silently.
ct_skip=$(sed -n 's/.*Skipped \([0-9]*\) (.*/\1/p' build/ct.log | tail -1)

adopt_all=$(sed -n 's/.*All \([0-9]*\) tests passed.*/\1/p' build/adoption.log | tail -1)
adopt_pass=$(sed -n 's/.*Passed \([0-9]*\) tests.*/\1/p' build/adoption.log | tail -1)
adopt_fail=$(sed -n 's/.*Failed \([0-9]*\) tests.*/\1/p' build/adoption.log | tail -1)
# ExUnit: "2 tests, 0 failures" (or "1 failure")
exunit_all=$(sed -n 's/^\([0-9]*\) tests\{0,1\}, [0-9]* failures\{0,1\}.*/\1/p' build/adoption.log | tail -1)
exunit_fail=$(sed -n 's/^[0-9]* tests\{0,1\}, \([0-9]*\) failures\{0,1\}.*/\1/p' build/adoption.log | tail -1)

passed=$(( ${unit_pass:-0} + ${ct_all:-${ct_pass:-0}} + ${adopt_all:-${adopt_pass:-0}} \
	+ ${exunit_all:-0} - ${exunit_fail:-0} ))
failed=$(( ${ct_fail:-0} + ${adopt_fail:-0} + ${exunit_fail:-0} ))
for n in ${unit_fail:-}; do failed=$(( failed + n )); done
# A part that failed without reporting counts (a build error, a crash) is a failure too.
if [ "$status" -ne 0 ] && [ "$failed" -eq 0 ]; then failed=1; fi

echo
echo "tests: $passed passed, $failed failed, ${ct_skip:-0} skipped"
exit "$status"
