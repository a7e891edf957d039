#!/usr/bin/env bash
# `make check`: the layers of c_src/ depend on each other in one direction.
#
# Every folder under c_src/ is a layer, and every include of a project
# header names its folder ("protocol/proc.h"). This script collects the
# folder-to-folder edges those includes make and fails when they contain a
# cycle (a layer that includes one that includes it back, directly or through
# others), or when an include does not name an existing folder. On success
# it prints the layers from the bottom up, with what each one uses.
set -euo pipefail
cd "$(dirname "$0")/.."

edges=$(mktemp)
trap 'rm -f "$edges"' EXIT
bad=0

for file in c_src/*/*.[ch]; do
    layer=$(basename "$(dirname "$file")")
    # Each layer is a node of the graph even when it includes nothing.
    echo "$layer $layer" >>"$edges"
    while IFS= read -r inc; do
        case "$inc" in
        */*.h)
            used=${inc%%/*}
            if [ ! -d "c_src/$used" ] || [ ! -f "c_src/$inc" ]; then
                echo "check: $file includes \"$inc\", which is not a header of c_src/" >&2
                bad=1
            elif [ "$used" != "$layer" ]; then
                echo "$used $layer" >>"$edges"
            fi
            ;;
        *)
            echo "check: $file includes \"$inc\" without its layer's folder" >&2
            bad=1
            ;;
        esac
    done < <(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$file")
done

# tsort orders the layers so that each comes after those it uses, and
# reports any cycle on stderr ("input contains a loop").
if ! order=$(sort -u "$edges" | tsort 2>"$edges.err") || [ -s "$edges.err" ]; then
    echo "check: the layers of c_src/ include each other in a cycle:" >&2
    cat "$edges.err" >&2
    rm -f "$edges.err"
    exit 1
fi
rm -f "$edges.err"
[ "$bad" -eq 0 ] || exit 1

echo "check: layers of c_src/, bottom up, with the layers each one includes:"
for layer in $order; do
    uses=$(awk -v l="$layer" '$2 == l && $1 != l { print $1 }' "$edges" | sort -u | tr '\n' ' ')
    printf '  %-13s %s\n' "$layer" "${uses:-(nothing)}"
done
