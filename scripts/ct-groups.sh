#!/usr/bin/env bash
# Splits the common_test suites — every test/*_SUITE.erl, found anew each
# run — into N groups that scripts/run-tests.sh runs side by side, each a
# `rebar3 ct` of its own, balanced by how long each suite takes. Prints one
# line per group that has suites, its name and its suites comma-separated,
# then one line for the suites that must run alone, after the groups, if any:
#
#   ct1 shardnode_partition_SUITE,shardnode_discovery_SUITE,...
#   ct2 shardnode_replicas_SUITE,...
#   serial shardnode_x_SUITE
#
# Every suite is in exactly one line: the script fails (non-zero, the reason
# on stderr) rather than print a split that leaves one out or names one twice.
#
# Usage: scripts/ct-groups.sh [N]     (N groups, default 2)
set -euo pipefail
cd "$(dirname "$0")/.."

n=${1:-2}
[[ "$n" =~ ^[1-9][0-9]*$ ]] || { echo "ct-groups: N must be a positive number, not '$n'" >&2; exit 1; }

# Seconds each suite took in a whole run on a 2-core machine (its
# suite.log's cases, init and end included), to balance the groups. Not a
# limit: a suite that grows only makes the split less even. A new suite
# counts DEFAULT_SECONDS until it is listed here; list it once measured
# (per-suite times: the =elapsed lines of build/ct/<group>/logs/ct_run.*/*/run.*/suite.log).
DEFAULT_SECONDS=60
declare -A seconds=(
	[shardnode_partition_SUITE]=143
	[shardnode_replicas_SUITE]=50
	[shardnode_cluster_SUITE]=44
	[shardnode_postgres_SUITE]=41
	[shardnode_pg_failover_SUITE]=10
	[entity_id_SUITE]=35
	[shardnode_dist_SUITE]=34
	[term_validate_SUITE]=31
	[shardnode_seeds_SUITE]=28
	[shardnode_store_SUITE]=26
	[phash2_SUITE]=24
	[term_encode_SUITE]=5
	[shardnode_ct_SUITE]=10
	[shardnode_logs_SUITE]=60
	[shardnode_upgrade_SUITE]=20
	[shardnode_metrics_SUITE]=14
	[shardnode_state_SUITE]=13
	[shardnode_sharding_SUITE]=9
	[shardnode_tls_SUITE]=7
	[shardnode_erlang_entities_SUITE]=7
	[shardnode_singleton_SUITE]=7
	[shardnode_entity_host_SUITE]=6
	[shardnode_discovery_SUITE]=4
	[shardnode_limits_SUITE]=2
	[shardnode_wrapper_SUITE]=1
	[shardnode_client_SUITE]=1
	[shardnode_args_SUITE]=1
)

# Suites that run alone, after the groups, with nothing beside them: one
# that fails only when others run at the same time goes here (with the
# reason), rather than have its assertions weakened. None today.
serial=()

for s in "${serial[@]}"; do
	[ -f "test/$s.erl" ] || { echo "ct-groups: serial suite $s is not in test/" >&2; exit 1; }
done

mapfile -t suites < <(find test -maxdepth 1 -name '*_SUITE.erl' -printf '%f\n' | sed 's/\.erl$//' | LC_ALL=C sort)
[ ${#suites[@]} -gt 0 ] || { echo "ct-groups: no test/*_SUITE.erl" >&2; exit 1; }

is_serial() {
	local s
	for s in "${serial[@]}"; do [ "$s" = "$1" ] && return 0; done
	return 1
}

# The units placed whole in one group: each suite alone, but the suites
# that build networks of Linux namespaces (those calling sn_netns: the
# partition and discovery suites) all in one unit. They name their
# bridges, namespaces and addresses apart, but each sets up and tears down
# a network as root and times failure detection in it; one after the
# other they never share the machine's network setup.
netns=()
units=()
for s in "${suites[@]}"; do
	is_serial "$s" && continue
	if grep -q 'sn_netns:' "test/$s.erl"; then
		netns+=("$s")
	else
		units+=("${seconds[$s]:-$DEFAULT_SECONDS} $s")
	fi
done
if [ ${#netns[@]} -gt 0 ]; then
	total=0
	for s in "${netns[@]}"; do total=$((total + ${seconds[$s]:-$DEFAULT_SECONDS})); done
	units+=("$total $(IFS=,; echo "${netns[*]}")")
fi

# Longest first, each to the group with the least so far (ties: the lower
# number), so the groups end close together.
declare -a load members
for ((g = 1; g <= n; g++)); do load[g]=0; members[g]=""; done
while read -r secs unit; do
	best=1
	for ((g = 2; g <= n; g++)); do
		[ "${load[g]}" -lt "${load[best]}" ] && best=$g
	done
	load[best]=$((load[best] + secs))
	members[best]=${members[best]:+${members[best]},}$unit
done < <(printf '%s\n' "${units[@]}" | sort -k1,1nr -k2,2)

# Every suite in exactly one line.
placed=$( { for ((g = 1; g <= n; g++)); do tr ',' '\n' <<<"${members[g]}"; done
	printf '%s\n' "${serial[@]}"; } | { grep -v '^$' || true; } | LC_ALL=C sort)
found=$(printf '%s\n' "${suites[@]}")
if [ "$placed" != "$found" ]; then
	echo "ct-groups: the split does not hold every suite exactly once:" >&2
	diff <(echo "$found") <(echo "$placed") >&2 || true
	exit 1
fi

for ((g = 1; g <= n; g++)); do
	[ -n "${members[g]}" ] && echo "ct$g ${members[g]}"
done
if [ ${#serial[@]} -gt 0 ]; then
	echo "serial $(IFS=,; echo "${serial[*]}")"
fi
exit 0
