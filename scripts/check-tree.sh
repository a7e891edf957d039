#!/usr/bin/env bash
# `make check`, second half: the shape of c_src/.
#
#   - every C file is at most 700 lines, and app/main.c at most 150: a file
#     that grows past that holds more than one concern;
#   - docs/architecture.md's file table lists every file of c_src/ under its
#     layer, and nothing that is not there;
#   - no build output is tracked by git.
set -euo pipefail
cd "$(dirname "$0")/.."
bad=0

for f in c_src/*/*.[ch]; do
    lines=$(wc -l <"$f")
    limit=700
    [ "$f" = c_src/app/main.c ] && limit=150
    if [ "$lines" -gt "$limit" ]; then
        echo "check: $f has $lines lines (at most $limit): split it along its concerns" >&2
        bad=1
    fi
done

# The files the table names: rows "| `a.[ch]`, `b.h` | ..." under a heading
# "### `c_src/<layer>/`", expanded to one path per line.
listed=$(awk '
    /^### `c_src\/[a-z_]+\/`/ { layer = $2; gsub(/`/, "", layer); next }
    /^## / { layer = "" }
    layer != "" && /^\| `/ {
        split($0, cells, "|")
        names = cells[2]
        gsub(/[` ]/, "", names)
        n = split(names, parts, ",")
        for (i = 1; i <= n; i++) {
            p = parts[i]
            if (p ~ /\.\[ch\]$/) {
                sub(/\.\[ch\]$/, "", p)
                print layer p ".c"; print layer p ".h"
            } else {
                print layer p
            }
        }
    }' docs/architecture.md | sort -u)
present=$(ls c_src/*/*.[ch] | sort -u)

missing=$(comm -13 <(echo "$listed") <(echo "$present"))
stale=$(comm -23 <(echo "$listed") <(echo "$present"))
for f in $missing; do
    echo "check: $f is not in docs/architecture.md's file table" >&2
    bad=1
done
for f in $stale; do
    echo "check: docs/architecture.md's file table lists $f, which does not exist" >&2
    bad=1
done

# No build output is tracked: what a build writes (rebar3's _build, .beam,
# objects, the node's binary and plugins, edoc's pages) would go stale
# against its sources in every clone.
if git rev-parse --git-dir >/dev/null 2>&1; then
    tracked=$(git ls-files | grep -E '(^|/)_build/|\.beam$|\.o$|\.so$|(^|/)ebin/|^build/|^priv/shardnode$|^erl_wrapper/doc/' || true)
    for f in $tracked; do
        echo "check: $f is a build output tracked by git: git rm --cached it (.gitignore keeps it out)" >&2
        bad=1
    done
fi

[ "$bad" -eq 0 ] || exit 1
echo "check: every C file within its line limit; docs/architecture.md lists the $(echo "$present" | wc -l) files of c_src/; no build output tracked"
