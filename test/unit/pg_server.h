/*
 * pg_server.h — a private PostgreSQL server for a unit test, started and
 * stopped with scripts/pg-server.sh (run from the checkout's root, as
 * make unit does).
 *
 * Static inline, as in unit_helpers.h: the test files are linked into one
 * binary with -Wmissing-prototypes.
 */
#ifndef SN_PG_SERVER_H
#define SN_PG_SERVER_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

struct pg_server {
	char dir[64]; /* empty: none started */
	int port;
};

/* Runs scripts/pg-server.sh `cmd` (start, halt, stop, pause, resume, kill) on
 * the server's dir; for start, reads the port it prints. */
static inline void pg_server_cmd(struct pg_server *s, const char *cmd)
{
	char line[256];
	snprintf(line, sizeof line, "scripts/pg-server.sh %s '%s'", cmd, s->dir);
	FILE *p = popen(line, "r");
	cr_assert_not_null(p);
	char out[64] = "";
	if (fgets(out, sizeof out, p) == NULL)
		out[0] = 0;
	cr_assert_eq(pclose(p), 0, "%s failed", line);
	if (strcmp(cmd, "start") == 0) {
		s->port = atoi(out);
		cr_assert_gt(s->port, 0, "no port from %s: %s", line, out);
	}
}

/* initdb into a new temporary directory and start the server. */
static inline void pg_server_start(struct pg_server *s)
{
	snprintf(s->dir, sizeof s->dir, "/tmp/sn-pg-unit-XXXXXX");
	cr_assert_not_null(mkdtemp(s->dir));
	pg_server_cmd(s, "start");
}

/* Stops the server and removes its directory, if one was started. */
static inline void pg_server_stop(struct pg_server *s)
{
	if (s->dir[0] != 0)
		pg_server_cmd(s, "stop");
	s->dir[0] = 0;
}

static inline void pg_server_conninfo(const struct pg_server *s, char *out, size_t n)
{
	snprintf(out, n, "host=127.0.0.1 port=%d user=postgres dbname=postgres connect_timeout=5", s->port);
}

/* The fixture both PostgreSQL test files use: one server per test, `srv`,
 * started by `setup` and stopped and removed by `teardown` (.init = setup,
 * .fini = teardown) even when the test fails half-way. */
#define PG_SERVER_FIXTURE                                          \
	static struct pg_server srv;                               \
	static void setup(void) { pg_server_start(&srv); }         \
	static void teardown(void) { pg_server_stop(&srv); }

#endif
