#!/usr/bin/env bash
# Adopting shardnode as a new user would (docs/contract.md "Adoption"): a
# throwaway rebar3 project that depends on this repository through a
# file:// git URL at the commit checked out, compiled from nothing (the
# dependency's compile hook builds the C node), and a common_test suite in
# it that starts a C node through the wrapper and calls a counter.
# Prints rebar3's lines; exits non-zero if anything fails.
# Usage: scripts/adoption-test.sh [WORK_DIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-$(mktemp -d)}
rev=$(git -C "$root" rev-parse HEAD)
if [ -n "$(git -C "$root" status --porcelain --untracked-files=no)" ]; then
	echo "adoption: note: uncommitted changes are not in the dependency (it is commit $rev)"
fi

project="$work/adopt_rebar3"
rm -rf "$project"
mkdir -p "$project/src" "$project/test"
cp "$root/scripts/adoption/adopt.app.src" "$project/src/"
cp "$root/scripts/adoption/adopt_SUITE.erl" "$project/test/"
cat > "$project/rebar.config" <<CONFIG
{erl_opts, [debug_info]}.
{deps, [{shardnode, {git, "file://$root", {ref, "$rev"}}}]}.
CONFIG
cd "$project"
# the dependency's C build runs two jobs at a time
export MAKEFLAGS=-j2
rebar3 compile
rebar3 ct --name "adopt$$@127.0.0.1" --setcookie adopt
