#!/usr/bin/env bash
# `make check`, third half: inside a layer, calls between files run one way.
#
# Reads the node's objects (build/rel/<layer>/<file>.o) with nm: file a
# calls file b when a's object uses a symbol that b's object defines. Those
# edges, per layer, must form no circle (a file calling one that calls it
# back, directly or through others): a part that needs its caller again
# hands control back through a re-entry point the caller owns (a timer, a
# callback it registered), not by calling into it.
#
#   scripts/check-circles.sh            (the objects must be built: make c)
set -euo pipefail
cd "$(dirname "$0")/.."

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

shopt -s nullglob
objs=(build/rel/*/*.o)
if [ ${#objs[@]} -eq 0 ]; then
    echo "check: no objects in build/rel: build them first (make c)" >&2
    exit 1
fi

# symbol file (defined), and file symbol (used), each file as layer/name.c
for o in "${objs[@]}"; do
    f=${o#build/rel/}
    f=${f%.o}.c
    nm -g --defined-only "$o" | awk -v f="$f" 'NF == 3 { print $3, f }' >>"$work/defs"
    nm -u "$o" | awk -v f="$f" '{ print f, $NF }' >>"$work/uses"
done

# a b sym: a calls b through sym, both in one layer
awk 'NR == FNR { def[$1] = $2; next }
     ($2 in def) {
         b = def[$2]; a = $1
         split(a, pa, "/"); split(b, pb, "/")
         if (a != b && pa[1] == pb[1]) print a, b, $2
     }' "$work/defs" "$work/uses" | sort -u >"$work/calls"
awk '{ print $1, $2 }' "$work/calls" | sort -u >"$work/edges"

bad=0
# tsort reports a circle among the edges not known ("input contains a
# loop"): each file of one, with the calls that close it.
if ! sort -u "$work/edges" | tsort >/dev/null 2>"$work/loops" || [ -s "$work/loops" ]; then
    echo "check: files of one layer call each other in a circle:" >&2
    sed -n 's/^tsort: //p' "$work/loops" | grep -v 'input contains a loop' | sort -u >"$work/in_loop"
    while read -r a b; do
        if grep -qx "$a" "$work/in_loop" && grep -qx "$b" "$work/in_loop"; then
            echo "  $a -> $b: $(awk -v a="$a" -v b="$b" '$1 == a && $2 == b { printf "%s ", $3 }' "$work/calls")" >&2
        fi
    done <"$work/edges"
    bad=1
fi
[ "$bad" -eq 0 ] || exit 1

echo "check: no circle of calls inside a layer ($(wc -l <"$work/edges") calls between files)"
