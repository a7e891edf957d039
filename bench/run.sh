#!/bin/sh
# make bench: compiles the load generators (the BEAM controller and the C
# one) into build/bench/ and runs the controller on a distributed BEAM node.
# Settings: see bench/README.md.
set -eu
cd "$(dirname "$0")/.."

OUT=build/bench
EBIN=_build/default/lib/shardnode/ebin
[ -f "$EBIN/shardnode.beam" ] || { echo "make bench: $EBIN missing; run make first" >&2; exit 1; }
[ -x priv/shardnode ] || { echo "make bench: priv/shardnode missing; run make first" >&2; exit 1; }

mkdir -p "$OUT"
erlc -Werror -pa "$EBIN" -o "$OUT" bench/*.erl

# The C load generator links the node's own runtime: every c_src/*/*.c but
# main.c. Rebuilt only when a source is newer than the binary, so a repeated
# run does not pay the few seconds of compiling.
ERL_ROOT=$(erl -noshell -eval 'io:format("~s",[code:root_dir()]),halt().' 2>/dev/null || echo /usr/lib/erlang)
LOADGEN="$OUT/c_loadgen"
LOADGEN_SRC=bench/c_loadgen.c
for f in c_src/*/*.c; do
    [ "$f" = c_src/app/main.c ] || LOADGEN_SRC="$LOADGEN_SRC $f"
done
if [ ! -x "$LOADGEN" ] || [ -n "$(find bench/c_loadgen.c c_src -newer "$LOADGEN" -name '*.[ch]' | head -n 1)" ]; then
    # shellcheck disable=SC2086 # the list is file names without spaces
    ${CC:-cc} -O2 -std=c11 -D_GNU_SOURCE -Wall -Wextra -Wshadow -Wstrict-prototypes \
        -Wmissing-prototypes -Wformat=2 -Wvla -Werror \
        -I"$ERL_ROOT/usr/include" -I/usr/include/postgresql -Ic_src $LOADGEN_SRC \
        -L"$ERL_ROOT/usr/lib" -lei -llmdb -lpq -lssl -lcrypto -lbsd -lpthread -ldl -lm -o "$LOADGEN"
fi
# The metrics page writer alone, over a page of 10 000 series.
PROM_BENCH="$OUT/prom_render_bench"
${CC:-cc} -O2 -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -Ic_src bench/prom_render_bench.c \
    c_src/base/prom_text.c c_src/base/histogram.c c_src/base/bytebuf.c -o "$PROM_BENCH"

TAG=$$
PIDS="$OUT/ospids.$TAG"
DATA="$OUT/data.$TAG"
: > "$PIDS"
ERL_PID=
# A private PostgreSQL server for the postgres rows (scripts/pg-server.sh),
# and the pgbench script of the raw-rate row: the transactions the node
# sends, of PG_BATCH writes on random counters — the fence statement over
# the shards written, then each upsert conditional on its shard's epoch —
# under a type of its own ('raw', whose owner rows the bench inserts).
PG_DIR="/tmp/sn-pg-bench-$TAG"
PG_PORT=$(scripts/pg-server.sh start "$PG_DIR") || { echo "make bench: cannot start PostgreSQL" >&2; exit 1; }
PG_BATCH=200
PG_SHARDS=100
PG_SCRIPT="$OUT/pg_upserts.$TAG.sql"
{
    # printf, not echo: sh's echo would read the backslashes as escapes.
    for i in $(seq 1 "$PG_BATCH"); do
        printf '\\set k%d random(1, 10000)\n' "$i"
    done
    printf '%s\n' '\startpipeline' 'BEGIN;'
    printf "SELECT o.shard FROM shardnode_shard_owner o JOIN unnest('{%s}'::integer[], '{%s}'::bigint[]) AS f(shard, epoch) ON o.shard = f.shard AND o.epoch = f.epoch WHERE o.type = 'raw' FOR SHARE OF o;\n" \
        "$(seq -s, 0 $((PG_SHARDS - 1)))" "$(seq -s, 1 "$PG_SHARDS" | sed 's/[0-9][0-9]*/1/g')"
    for i in $(seq 1 "$PG_BATCH"); do
        printf "INSERT INTO shardnode_entity_state (type, id, shard, state, epoch) SELECT 'raw'::text, int4send(:k%d), (:k%d %% $PG_SHARDS)::integer, '\\\\x836107'::bytea, 1::bigint WHERE EXISTS (SELECT 1 FROM shardnode_shard_owner WHERE type = 'raw' AND shard = :k%d %% $PG_SHARDS AND epoch = 1) ON CONFLICT (type, id) DO UPDATE SET shard = EXCLUDED.shard, state = EXCLUDED.state, revision = shardnode_entity_state.revision + 1, epoch = EXCLUDED.epoch WHERE shardnode_entity_state.epoch <= EXCLUDED.epoch;\\n" "$i" "$i" "$i"
    done
    printf '%s\n' 'COMMIT;' '\endpipeline'
} > "$PG_SCRIPT"

# The controller stops every node it starts, also when a figure fails. This
# is the fallback for when the controller itself is stopped or dies: the
# OS processes it recorded that still run and still carry this run's tag
# are ended.
cleanup() {
    status=$?
    trap - EXIT INT TERM
    if [ -n "$ERL_PID" ] && kill -0 "$ERL_PID" 2>/dev/null; then
        kill -TERM "$ERL_PID" 2>/dev/null || true   # the BEAM stops its applications
        wait "$ERL_PID" 2>/dev/null || true
    fi
    while read -r pid; do
        if [ -r "/proc/$pid/cmdline" ] && tr '\0' ' ' < "/proc/$pid/cmdline" | grep -q "bench_[a-z]*$TAG@"; then
            echo "make bench: ending leftover process $pid" >&2
            kill -TERM "$pid" 2>/dev/null || true
            sleep 1
            kill -KILL "$pid" 2>/dev/null || true
        fi
    done < "$PIDS"
    scripts/pg-server.sh stop "$PG_DIR" || true
    rm -rf "$PIDS" "$DATA" "$PG_SCRIPT"
    exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# In the background, so that a signal to this script is handled at once.
BENCH_TAG=$TAG BENCH_PIDS_FILE=$PIDS BENCH_DATA_DIR=$DATA BENCH_C_LOADGEN=$LOADGEN BENCH_PROM=$PROM_BENCH \
    BENCH_PG_PORT=$PG_PORT BENCH_PG_SCRIPT=$PG_SCRIPT BENCH_PG_BATCH=$PG_BATCH BENCH_PG_SHARDS=$PG_SHARDS \
    erl -noshell -noinput \
        -name "bench$TAG@127.0.0.1" -setcookie shardnode_bench \
        -pa "$EBIN" -pa "$OUT" \
        -eval 'shardnode_bench:main()' &
ERL_PID=$!
status=0
wait "$ERL_PID" || status=$?
ERL_PID=
exit "$status"
