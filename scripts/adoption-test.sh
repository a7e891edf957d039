#!/usr/bin/env bash
# Adopting shardnode as a new user would (docs/contract.md "Adoption"): a
# throwaway rebar3 project and a throwaway Mix project, each depending on
# this repository through a file:// git URL at the commit checked out,
# compiled from nothing (the dependency's compile hook, or its Mix
# compiler, builds the C node), each with tests that start a C node through
# the wrapper and call a counter: a common_test suite (scripts/adoption/rebar3)
# and ExUnit tests (scripts/adoption/mix). The rebar3 project also runs the
# example suite of the common_test kit (examples/order_SUITE.erl, its entity
# examples/order.erl) as a team's project would.
# Prints the tools' lines; exits non-zero if anything fails.
# Usage: scripts/adoption-test.sh [WORK_DIR [rebar3|mix ...]]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-$(mktemp -d)}
shift || true
tools=("$@")
[ ${#tools[@]} -gt 0 ] || tools=(rebar3 mix)
rev=$(git -C "$root" rev-parse HEAD)
if [ -n "$(git -C "$root" status --porcelain --untracked-files=no)" ]; then
	echo "adoption: note: uncommitted changes are not in the dependency (it is commit $rev)"
fi
# the dependency's C build runs two jobs at a time
export MAKEFLAGS=-j2

adopt_rebar3() {
	local project="$work/adopt_rebar3"
	rm -rf "$project"
	mkdir -p "$project/src" "$project/test"
	cp "$root/scripts/adoption/rebar3/adopt.app.src" "$project/src/"
	cp "$root/scripts/adoption/rebar3/adopt_SUITE.erl" "$project/test/"
	# the example suite a team writes with the kit, and its entity
	cp "$root/examples/order_SUITE.erl" "$project/test/"
	cp "$root/examples/order.erl" "$project/src/"
	cat > "$project/rebar.config" <<CONFIG
{erl_opts, [debug_info]}.
{deps, [{shardnode, {git, "file://$root", {ref, "$rev"}}}]}.
CONFIG
	(cd "$project" &&
		rebar3 compile &&
		rebar3 ct --name "adopt$$@127.0.0.1" --setcookie adopt)
}

adopt_mix() {
	local project="$work/adopt_mix"
	rm -rf "$project"
	mkdir -p "$project/lib" "$project/test"
	cp "$root/scripts/adoption/mix/test_helper.exs" "$root/scripts/adoption/mix/adopt_test.exs" \
		"$root/scripts/adoption/mix/entity_test.exs" "$project/test/"
	cp "$root/examples/cart.ex" "$project/lib/"
	cat > "$project/mix.exs" <<MIX
defmodule Adopt.MixProject do
  use Mix.Project

  def project do
    [app: :adopt, version: "0.1.0", deps: [{:shardnode, git: "file://$root", ref: "$rev"}]]
  end

  def application, do: [extra_applications: [:logger]]
end
MIX
	# Mix keeps its archives and caches in MIX_HOME: one of this run's own,
	# so nothing the user has installed (Hex, rebar) takes part.
	(cd "$project" &&
		export MIX_HOME="$work/mix_home" MIX_ENV=test &&
		# git's progress lines for the clone: kept, and shown if it fails
		{ mix deps.get > "$work/mix-deps.log" 2>&1 || { cat "$work/mix-deps.log"; false; }; } &&
		mix compile &&
		elixir --name "adopt_ex$$@127.0.0.1" --cookie adopt -S mix test)
}

for tool in "${tools[@]}"; do
	echo "adoption: from $tool"
	"adopt_$tool"
done
