#!/usr/bin/env bash
# Runs every test — the Criterion unit tests (under ASan and UBSan), the
# common_test suites, and throwaway rebar3 and Mix projects that adopt the
# repository as a dependency (scripts/adoption-test.sh) — even when one part
# fails, then prints one closing line, "tests: N passed, M failed, K skipped",
# and exits non-zero if anything failed.
#
# The common_test suites spend most of their time waiting (for a node to
# notice a failure, for a timer), so they run in groups side by side:
# scripts/ct-groups.sh splits every test/*_SUITE.erl into CT_GROUPS groups
# (default 2), balanced by duration, and the suites it lists as serial run
# after everything else, alone. Each group is a `rebar3 ct` of its own, with
# its own node name (ct1_<pid>@127.0.0.1, ...; CT_NODE_PREFIX replaces "ct"),
# its own common_test logs (build/ct/ct1/logs/index.html), its own output
# (build/ct1.log) and its own rebar3 build directory (REBAR_BASE_DIR=
# build/ct/ct1, ...), compiled before any group starts: `rebar3 ct` copies
# test/ into its build directory and compiles there each time it starts, so
# two runs sharing one _build would rewrite files the other is loading.
#
# Beside the groups, one after another and at low priority (nice 10), so
# that the suites' timing is theirs: the unit tests, then the make targets
# named as arguments (make test names its static checks), then the adoption
# tests. A target that fails counts one failure in the closing line.
#
# Every part's output goes to build/<part>.log and is printed here once all
# have ended, in a fixed order; while they run, one line per part started
# and ended.
#
# Usage: scripts/run-tests.sh [MAKE_TARGET ...]
set -uo pipefail
cd "$(dirname "$0")/.."
mkdir -p build
ct_groups=${CT_GROUPS:-2}
node_prefix=${CT_NODE_PREFIX:-ct}
targets=("$@")
# each part's exit status, one file per part
rcs=build/parts
rm -rf "$rcs" build/ct
mkdir -p "$rcs"

say() { echo "run-tests: [$(printf '%4d' "$SECONDS") s] $*"; }

# part NAME COMMAND...: runs COMMAND, its output in build/NAME.log, and
# keeps its exit status in build/parts/NAME.
part() {
	local name=$1 t0=$SECONDS rc
	shift
	say "$name: started"
	"$@" >"build/$name.log" 2>&1
	rc=$?
	echo "$rc" >"$rcs/$name"
	say "$name: exit $rc after $((SECONDS - t0)) s (build/$name.log)"
	return "$rc"
}

# What the parts share is built first, once: the C node, the plugins and
# the unit tests' binary (make test has built them already).
part build make --no-print-directory -j2 all build/asan/unit

run_beside() {
	renice -n 10 -p "$BASHPID" >/dev/null
	part unit make --no-print-directory unit
	local t
	for t in "${targets[@]}"; do
		part "$t" make --no-print-directory "$t"
	done
	rm -rf build/adoption
	part adoption scripts/adoption-test.sh "$(pwd)/build/adoption"
}
run_beside &
beside_pid=$!
beside_done=no
wait_beside() {
	[ "$beside_done" = yes ] || wait "$beside_pid"
	beside_done=yes
}

# The groups, each compiled into its own build directory before any starts.
ct_parts=()
declare -A ct_suites=()
if part ct-groups scripts/ct-groups.sh "$ct_groups"; then
	while read -r name suites; do
		ct_parts+=("$name")
		ct_suites[$name]=$suites
	done <build/ct-groups.log
fi
compile_groups() {
	local name
	for name in "${ct_parts[@]}"; do
		echo "== $name: ${ct_suites[$name]}"
		REBAR_BASE_DIR="$(pwd)/build/ct/$name" rebar3 as test compile || return 1
	done
}
ct_run() { # GROUP
	REBAR_BASE_DIR="$(pwd)/build/ct/$1" rebar3 ct --dir test --suite "${ct_suites[$1]}" \
		--name "$node_prefix${1#ct}_$$@127.0.0.1" --setcookie shardnode_test --logdir "build/ct/$1/logs"
}
ran=()
if [ ${#ct_parts[@]} -gt 0 ] && part ct-compile compile_groups; then
	pids=()
	for name in "${ct_parts[@]}"; do
		[ "$name" = serial ] && continue
		part "$name" ct_run "$name" &
		pids+=($!)
		ran+=("$name")
	done
	[ ${#pids[@]} -eq 0 ] || wait "${pids[@]}"
	if [ -n "${ct_suites[serial]:-}" ]; then
		wait_beside
		part ct-serial ct_run serial
		ran+=(ct-serial)
	fi
fi
wait_beside

# The parts' output, in a fixed order.
for name in build unit ct-groups ct-compile "${ran[@]}" adoption "${targets[@]}"; do
	[ -f "build/$name.log" ] || continue
	echo
	echo "==== $name (build/$name.log)"
	cat "build/$name.log"
done

status=0
failed=0
passed=0
skipped=0
# A part that failed: its failures counted below, or, when it reported
# none (a build error, a crash), one. A part that did not run (the groups
# after a failed split or compile) adds nothing: that failure is counted.
part_failed() { # NAME FAILURES_IT_REPORTED
	local rc
	[ -f "$rcs/$1" ] || return 0
	rc=$(cat "$rcs/$1")
	if [ "$rc" != 0 ]; then
		status=1
		if [ "$2" -eq 0 ]; then
			failed=$((failed + 1))
			echo "run-tests: $1 failed (exit $rc) without a failed test counted: one failure"
		fi
	fi
}

# Criterion: "Synthesis: Tested: 10 | Passing: 9 | Failing: 1 | Crashing: 0"
unit_pass=$(sed -n 's/.*Synthesis: Tested: [0-9]* | Passing: \([0-9]*\).*/\1/p' build/unit.log | tail -1)
unit_fail=0
for n in $(sed -n 's/.*| Failing: \([0-9]*\) | Crashing: \([0-9]*\).*/\1 \2/p' build/unit.log | tail -1); do
	unit_fail=$((unit_fail + n))
done
passed=$((passed + ${unit_pass:-0}))
failed=$((failed + unit_fail))
part_failed unit "$unit_fail"

# common_test, per group: "All 15 tests passed." or "Failed 2 tests. Passed 13 tests."
# "Skipped 6 (6, 0) tests.": cases skipped, e.g. the partition suite where no
# network namespace can be made; said, never passed silently.
part_failed build 0
part_failed ct-groups 0
part_failed ct-compile 0
for name in "${ran[@]}"; do
	ct_all=$(sed -n 's/.*All \([0-9]*\) tests passed.*/\1/p' "build/$name.log" | tail -1)
	ct_pass=$(sed -n 's/.*Passed \([0-9]*\) tests.*/\1/p' "build/$name.log" | tail -1)
	ct_fail=$(sed -n 's/.*Failed \([0-9]*\) tests.*/\1/p' "build/$name.log" | tail -1)
	ct_skip=$(sed -n 's/.*Skipped \([0-9]*\) (.*/\1/p' "build/$name.log" | tail -1)
	passed=$((passed + ${ct_all:-${ct_pass:-0}}))
	failed=$((failed + ${ct_fail:-0}))
	skipped=$((skipped + ${ct_skip:-0}))
	part_failed "$name" "${ct_fail:-0}"
done

adopt_all=$(sed -n 's/.*All \([0-9]*\) tests passed.*/\1/p' build/adoption.log | tail -1)
adopt_pass=$(sed -n 's/.*Passed \([0-9]*\) tests.*/\1/p' build/adoption.log | tail -1)
adopt_fail=$(sed -n 's/.*Failed \([0-9]*\) tests.*/\1/p' build/adoption.log | tail -1)
# ExUnit: "2 tests, 0 failures" (or "1 failure")
exunit_all=$(sed -n 's/^\([0-9]*\) tests\{0,1\}, [0-9]* failures\{0,1\}.*/\1/p' build/adoption.log | tail -1)
exunit_fail=$(sed -n 's/^[0-9]* tests\{0,1\}, \([0-9]*\) failures\{0,1\}.*/\1/p' build/adoption.log | tail -1)
passed=$((passed + ${adopt_all:-${adopt_pass:-0}} + ${exunit_all:-0} - ${exunit_fail:-0}))
failed=$((failed + ${adopt_fail:-0} + ${exunit_fail:-0}))
part_failed adoption $((${adopt_fail:-0} + ${exunit_fail:-0}))

for t in "${targets[@]}"; do
	part_failed "$t" 0
done

echo
for name in "${ran[@]}"; do
	echo "run-tests: $name: ${ct_suites[${name#ct-}]}; logs in build/ct/${name#ct-}/logs/index.html"
done
# What failed, named again at the end, where a reader of only the last lines
# (a CI summary) looks: common_test's "%%% SUITE ==> case: FAILED" line and
# the reason after it (its first lines), Criterion's "[FAIL]" lines, and the last lines of a
# target that failed.
if [ "$status" != 0 ]; then
	for name in "${ran[@]}" adoption; do
		[ -f "build/$name.log" ] || continue
		sed 's/\x1b\[[0-9;]*m//g' "build/$name.log" | grep -a -A4 ' ==> .*: FAILED' |
			grep -av '^--$' | head -30 | sed "s/^/run-tests: $name: /"
	done
	[ -f build/unit.log ] && grep -a '\[FAIL\]' build/unit.log | head -10 | sed 's/^/run-tests: unit: /'
	for t in "${targets[@]}"; do
		[ "$(cat "$rcs/$t" 2>/dev/null)" = 0 ] || tail -n 5 "build/$t.log" | sed "s/^/run-tests: $t: /"
	done
fi
echo "tests: $passed passed, $failed failed, $skipped skipped"
exit "$status"
