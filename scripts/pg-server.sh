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
#
# PostgreSQL refuses to run as root: as root the server runs as the
# `postgres` user (DIR is made its own); as anyone else, as that user.
# Exits non-zero, with the server's log on stderr, when it cannot start.
set -euo pipefail

cmd=${1:?usage: pg-server.sh start|halt|stop|pause|resume DIR}
dir=${2:?usage: pg-server.sh start|halt|stop|pause|resume DIR}

bindir=$(pg_config --bindir 2>/dev/null || true)
if [ -z "$bindir" ] || [ ! -x "$bindir/initdb" ]; then
	bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
fi
[ -x "$bindir/initdb" ] || { echo "pg-server: no PostgreSQL server binaries (install postgresql)" >&2; exit 1; }

as_owner() {
	if [ "$(id -u)" -eq 0 ]; then
		runuser -u postgres -- "$@"
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
	for _ in 1 2 3 4 5; do
		port=$(free_port)
		if start_on "$port"; then
			echo "$port" >"$dir/port"
			echo "$port"
			exit 0
		fi
	done
	cat "$dir/server.log" >&2
	exit 1
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
	echo "usage: pg-server.sh start|halt|stop|pause|resume DIR" >&2
	exit 2
	;;
esac
