#!/usr/bin/env bash
# A private PostgreSQL server for tests and benchmarks: its own data
# directory, a free port on 127.0.0.1, trust authentication, no effect on
# any other server on the machine.
#
#   scripts/pg-server.sh start DIR   initdb into DIR (created, must not
#                                    exist or be empty), start the server;
#                                    prints its port on stdout. A DIR that
#                                    holds a halted server: start it again
#                                    on the same port.
#   scripts/pg-server.sh halt DIR    stop it (fast), keeping DIR
#   scripts/pg-server.sh stop DIR    stop it (fast) and remove DIR
#   scripts/pg-server.sh pause DIR   SIGSTOP the postmaster and its children
#   scripts/pg-server.sh resume DIR  SIGCONT them
#   scripts/pg-server.sh kill DIR    SIGKILL them: the server crashes, as at
#                                    a power cut (DIR is kept)
#   scripts/pg-server.sh standby DIR PRIMARY_DIR [sync]
#                                    a streaming standby of the server in
#                                    PRIMARY_DIR, copied with pg_basebackup
#                                    into DIR and started; prints its port.
#                                    `sync`: the primary's every commit waits
#                                    for the standby to have it
#                                    (synchronous_standby_names = '*')
#   scripts/pg-server.sh promote DIR a standby becomes a primary
#
# PostgreSQL refuses to run as root: as root the server runs as the
# `postgres` user (DIR is made its own); as anyone else, as that user.
# Exits non-zero, with the server's log on stderr, when it cannot start.
set -euo pipefail

usage="usage: pg-server.sh start|halt|stop|pause|resume|kill|promote DIR, or standby DIR PRIMARY_DIR [sync]"
cmd=${1:?$usage}
dir=${2:?$usage}
# Absolute: the server's own commands run from / (below).
dir=$(realpath -m "$dir")

bindir=$(pg_config --bindir 2>/dev/null || true)
if [ -z "$bindir" ] || [ ! -x "$bindir/initdb" ]; then
	bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
fi
[ -x "$bindir/initdb" ] || { echo "pg-server: no PostgreSQL server binaries (install postgresql)" >&2; exit 1; }

# Runs a command as the server's owner, from /: the caller's directory may
# be one the postgres user cannot enter (a mktemp -d checkout), and psql
# would say so on stderr, into what the caller reads.
as_owner() {
	if [ "$(id -u)" -eq 0 ]; then
		(cd / && runuser -u postgres -- "$@")
	else
		"$@"
	fi
}

free_port() {
	# A port in the ephemeral range nobody listens on now (iproute2's ss);
	# if another takes it first, the start fails and another is tried.
	local p
	while :; do
		p=$((32768 + RANDOM % 28000))
		ss -Htln "sport = :$p" | grep -q . || break
	done
	echo "$p"
}

postmaster_pid() {
	head -n 1 "$dir/data/postmaster.pid" 2>/dev/null || true
}

start_on() { # port
	as_owner "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 30 \
		-o "-p $1 -k $dir -c listen_addresses=127.0.0.1" start >/dev/null 2>&1
}

halt() {
	[ -f "$dir/data/postmaster.pid" ] || return 0
	local pid
	pid=$(postmaster_pid)
	[ -n "$pid" ] && kill -CONT "$pid" $(pgrep -P "$pid" || true) 2>/dev/null || true
	as_owner "$bindir/pg_ctl" -D "$dir/data" -m fast -w -t 30 stop >/dev/null 2>&1 ||
		{ [ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null || true; }
}

# Starts the server in $dir on a free port, trying a few; prints the port.
start_fresh() {
	for _ in 1 2 3 4 5; do
		port=$(free_port)
		if start_on "$port"; then
			echo "$port" >"$dir/port"
			echo "$port"
			return 0
		fi
	done
	cat "$dir/server.log" >&2
	return 1
}

psql_on() { # port sql
	as_owner "$bindir/psql" -X -q -t -A -h 127.0.0.1 -p "$1" -U postgres -d postgres -c "$2"
}

case "$cmd" in
start)
	if [ -f "$dir/port" ] && [ -d "$dir/data" ]; then
		port=$(cat "$dir/port")
		start_on "$port" || { cat "$dir/server.log" >&2; exit 1; }
		echo "$port"
		exit 0
	fi
	mkdir -p "$dir"
	[ "$(id -u)" -eq 0 ] && chown postgres "$dir"
	as_owner "$bindir/initdb" -D "$dir/data" -A trust -U postgres --no-sync >"$dir/initdb.log" 2>&1 ||
		{ cat "$dir/initdb.log" >&2; exit 1; }
	start_fresh
	;;
standby)
	primary=$(realpath -m "${3:?$usage}")
	primary_port=$(cat "$primary/port")
	mkdir -p "$dir"
	[ "$(id -u)" -eq 0 ] && chown postgres "$dir"
	# -R: standby.signal and primary_conninfo, so it starts as a standby
	# streaming from the primary; -X stream: the WAL of the copy with it.
	as_owner "$bindir/pg_basebackup" -D "$dir/data" -h 127.0.0.1 -p "$primary_port" -U postgres \
		-R -X stream -c fast --no-sync >"$dir/basebackup.log" 2>&1 ||
		{ cat "$dir/basebackup.log" >&2; exit 1; }
	start_fresh
	if [ "${4:-}" = sync ]; then
		psql_on "$primary_port" "ALTER SYSTEM SET synchronous_standby_names = '*'" >/dev/null
		psql_on "$primary_port" "SELECT pg_reload_conf()" >/dev/null
	fi
	# Streaming before it is handed out: the primary sees its walsender.
	for _ in $(seq 1 100); do
		[ "$(psql_on "$primary_port" "SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming'")" -ge 1 ] &&
			exit 0
		sleep 0.1
	done
	echo "pg-server: the standby in $dir never streamed from $primary" >&2
	cat "$dir/server.log" >&2
	exit 1
	;;
promote)
	as_owner "$bindir/pg_ctl" -D "$dir/data" -w -t 30 promote >/dev/null
	;;
kill)
	pid=$(postmaster_pid)
	[ -n "$pid" ] || { echo "pg-server: no server running in $dir" >&2; exit 1; }
	kill -KILL "$pid" $(pgrep -P "$pid" || true) 2>/dev/null || true
	;;
halt)
	halt
	;;
stop)
	halt
	rm -rf "$dir"
	;;
pause | resume)
	pid=$(postmaster_pid)
	[ -n "$pid" ] || { echo "pg-server: no server running in $dir" >&2; exit 1; }
	sig=STOP
	[ "$cmd" = resume ] && sig=CONT
	kill -"$sig" "$pid" $(pgrep -P "$pid" || true)
	;;
*)
	echo "$usage" >&2
	exit 2
	;;
esac
