#!/bin/sh
# make bench-ab BASE=<commit> [AB_ROUNDS=N]: whether a change made the
# benchmark faster, on a machine whose own speed drifts. Builds BASE in a
# worktree (build/ab-base) and runs `make bench` there and in this tree
# in turn, AB_ROUNDS times each (3 unless told), with the bench settings of
# the environment (BENCH_ONLY and the rest, bench/README.md). Then, for
# every row of the tables, the ratio this tree / BASE of each adjacent pair
# of runs: its median and its range. A pair's runs are a minute or two
# apart, so the ratio of a pair cancels most of the drift that a mean over
# separate runs does not; the BEAM column's ratio shows what is left of it
# (1.00 on a steady machine: the baseline did not change). Each run's whole
# output stays in build/ab/.
# AB_SUMMARY_ONLY=1 reads the runs left in build/ab again, running none.
set -eu
cd "$(dirname "$0")/.."
ROOT=$(pwd)
ROUNDS=${AB_ROUNDS:-3}
OUT=build/ab
WT=build/ab-base

# The table rows: | label | shardnode | BEAM | ratio | ... |, numbers with
# spaces between thousands, n/a where a column has none.
summarise() {
awk -F'|' -v rounds="$ROUNDS" '
function num(s) { gsub(/[ \t]/, "", s); return (s ~ /^-?[0-9.]+$/) ? s + 0 : "" }
function sort(a, n,   i, j, t) { for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] > a[j]; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t } }
function summary(a, n) {
    if (n == 0) return "-"
    sort(a, n)
    return sprintf("%.2f (%.2f-%.2f)", (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2, a[1], a[n])
}
FNR == 1 { n = split(FILENAME, p, "/"); f = p[n]; side = substr(f, 1, index(f, "_") - 1); run = substr(f, index(f, "_") + 1) + 0 }
/^\| / && NF >= 5 {
    label = $2; gsub(/^ +| +$/, "", label)
    if (label == "" || label ~ /^-+$/ || label == "figure") next
    if (!(label in seen)) { seen[label] = 1; order[++nrows] = label }
    sn[side, run, label] = num($3); bm[side, run, label] = num($4)
}
END {
    printf "%-90s %18s %18s\n", "row: this tree / base, the median of the pairs (range)", "shardnode", "BEAM"
    for (k = 1; k <= nrows; k++) {
        label = order[k]; ns = 0; nb = 0
        for (r = 1; r <= rounds; r++) {
            a = sn["base", r, label]; b = sn["new", r, label]
            if (a != "" && b != "" && a != 0) s[++ns] = b / a
            a = bm["base", r, label]; b = bm["new", r, label]
            if (a != "" && b != "" && a != 0) t[++nb] = b / a
        }
        if (ns + nb > 0) printf "%-90.90s %18s %18s\n", label, summary(s, ns), summary(t, nb)
        split("", s); split("", t)
    }
}' "$OUT"/base_*.txt "$OUT"/new_*.txt
}

if [ "${AB_SUMMARY_ONLY:-0}" = 1 ]; then
    summarise
    exit 0
fi
BASE=${BASE:?make bench-ab: say BASE=<commit> to compare this tree with}
mkdir -p "$OUT"
rm -f "$OUT"/base_*.txt "$OUT"/new_*.txt

# A fresh worktree at BASE every time: one left from an earlier compare
# may be of another commit.
if [ -d "$WT" ]; then
    git worktree remove --force "$WT" 2>/dev/null || rm -rf "$WT"
    git worktree prune
fi
git worktree add --detach "$WT" "$BASE" >/dev/null
trap 'git worktree remove --force "$WT" 2>/dev/null || true' EXIT
(cd "$WT" && make -s all >/dev/null)
make -s all >/dev/null

i=1
while [ "$i" -le "$ROUNDS" ]; do
    echo "bench-ab: round $i of $ROUNDS: $BASE" >&2
    (cd "$WT" && bench/run.sh >"$ROOT/$OUT/base_$i.txt" 2>&1)
    echo "bench-ab: round $i of $ROUNDS: this tree" >&2
    bench/run.sh >"$OUT/new_$i.txt" 2>&1
    i=$((i + 1))
done

summarise
