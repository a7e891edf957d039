#!/usr/bin/env bash
# Builds the C node of the previous release — the commit release/previous
# names — from this repository's own git history, and prints the path of its
# priv/shardnode on stdout. The upgrade test (test/shardnode_upgrade_SUITE.erl)
# runs a cluster of it and rolls it to the build at hand.
#
#   scripts/build-previous-release.sh
#
# The commit's tree is exported with `git archive` into
# build/previous/<tag>-<commit>/ and built there with `make -j2 c` (about a
# minute); a build already there for that commit is reused. The build goes
# into a temporary directory first and is renamed into place only once it is
# complete, so an interrupted build is never taken for a finished one.
#
# Fails (non-zero, the reason on stderr) when the commit is not in this
# clone's history — a shallow clone (`git clone --depth N`, CI checkouts
# often are) — naming the fix: fetch the full history. Build output goes to
# build/previous/<tag>-<commit>.log, and its end to stderr when it fails.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

fail() {
	echo "build-previous-release: $*" >&2
	exit 1
}

[ -f release/previous ] || fail "release/previous is missing: it names the previous release"
# The first line that is not a comment: "vMAJOR.MINOR.PATCH <40-hex commit>".
read -r tag commit < <(grep -v '^[[:space:]]*\(#\|$\)' release/previous | head -n 1) ||
	fail "release/previous names no release"
[[ "$tag" =~ ^v[0-9]+\.[0-9]+\.[0-9]+$ ]] || fail "release/previous: '$tag' is no vMAJOR.MINOR.PATCH tag"
[[ "$commit" =~ ^[0-9a-f]{40}$ ]] || fail "release/previous: '$commit' is no full 40-hex commit"

git rev-parse --git-dir >/dev/null 2>&1 ||
	fail "$root is not a git checkout: the previous release ($tag, $commit) is built from its history"

if ! git cat-file -e "$commit^{commit}" 2>/dev/null; then
	if [ "$(git rev-parse --is-shallow-repository)" = true ]; then
		why="this is a shallow clone, which holds only the newest commits"
	else
		why="this clone's history does not hold it"
	fi
	fail "the previous release $tag (commit $commit, named in release/previous) is not in this repository: $why.
The upgrade test builds that release from the repository's own history. Fetch the full history and run again:
    git fetch --unshallow    (a shallow clone)
    git fetch origin $commit    (or: git fetch --tags origin)"
fi

out=build/previous/$tag-$commit
if [ -x "$out/priv/shardnode" ]; then
	echo "$root/$out/priv/shardnode"
	exit 0
fi

mkdir -p build/previous
log=$out.log
tmp=$(mktemp -d "build/previous/.building-$tag-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
echo "build-previous-release: building $tag ($commit) into $out (log: $log)" >&2
git archive --format=tar "$commit" | tar -x -C "$tmp"
# Built as its own Makefile says: nothing of a make this runs under (make
# test's variables and jobserver, passed down in MAKEFLAGS) reaches it.
if ! env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -C "$tmp" -j2 c >"$log" 2>&1; then
	tail -n 40 "$log" >&2
	fail "building $tag ($commit) failed; the whole output is in $log"
fi
[ -x "$tmp/priv/shardnode" ] || fail "building $tag made no priv/shardnode; see $log"
# Another build of the same commit may have finished first: keep that one.
mv -T "$tmp" "$out" 2>/dev/null || [ -x "$out/priv/shardnode" ] ||
	fail "cannot move the build of $tag into $out"
echo "$root/$out/priv/shardnode"
