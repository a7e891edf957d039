/*
 * test_pg_conn.c — the loop-driven PostgreSQL connection against a real
 * server (scripts/pg-server.sh starts a private one per test): statements
 * pipelined and answered in order, an error aborting the rest of its batch
 * only, binary parameters and results, a server that is not there yet, one
 * that goes away and comes back, a list of hosts whose first refuses, an
 * attempt that hangs.
 */
#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <unistd.h>

#include "base/evloop.h"
#include "base/log.h"
#include "store/pg_conn.h"
#include "pg_server.h"
#include "unit_helpers.h"

static const struct logger quiet = {.min_level = LOG_ERROR, .out = NULL};

PG_SERVER_FIXTURE

/* What the callbacks saw. */
struct seen {
	struct evloop *loop;
	int ups, downs;
	int answered, wait_for; /* stop the loop at this many answers */
	bool wait_up, wait_down;
	ExecStatusType status[64];
	char value[64][32]; /* the first field of the first row, as text */
	int nulls;          /* answers with a NULL result */
	struct pg_conn *conn; /* set: each NULL answer notes pg_conn_answering_unsent */
	bool unsent[64];
};

struct answer_ctx {
	struct seen *seen;
	int index;
};

static void on_state(void *arg, bool up)
{
	struct seen *s = arg;
	if (up)
		s->ups++;
	else
		s->downs++;
	if ((up && s->wait_up) || (!up && s->wait_down))
		evloop_stop(s->loop);
}

static void on_result(void *arg, const PGresult *res)
{
	struct answer_ctx *a = arg;
	struct seen *s = a->seen;
	if (res == NULL) {
		s->nulls++;
		s->status[a->index] = PGRES_FATAL_ERROR;
		s->unsent[a->index] = s->conn != NULL && pg_conn_answering_unsent(s->conn);
	} else {
		s->status[a->index] = PQresultStatus(res);
		if (PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) > 0 && !PQgetisnull(res, 0, 0))
			snprintf(s->value[a->index], sizeof s->value[a->index], "%s", PQgetvalue(res, 0, 0));
	}
	if (++s->answered == s->wait_for)
		evloop_stop(s->loop);
}

static struct answer_ctx ctx[64];

static void query(struct pg_conn *c, struct seen *s, int index, const char *sql)
{
	ctx[index] = (struct answer_ctx){s, index};
	cr_assert_eq(pg_conn_query(c, sql, 0, NULL, NULL, NULL, 0, on_result, &ctx[index]), 0);
}

static void wait_answers(struct seen *s, int n)
{
	if (s->answered >= n)
		return;
	s->wait_for = n;
	sn_run_loop(s->loop, 15000);
	cr_assert_eq(s->answered, n);
}

/* Turns s's loop until the connection has come up `ups` times in all. */
static void wait_up(struct seen *s, int ups)
{
	if (s->ups < ups) {
		s->wait_up = true;
		sn_run_loop(s->loop, 15000);
		s->wait_up = false;
	}
	cr_assert_eq(s->ups, ups);
}

/* A loop and a connection with conninfo `ci`, its callbacks into `s`. */
static struct pg_conn *connect_with(struct seen *s, const char *ci)
{
	struct evloop *loop = evloop_new();
	cr_assert_not_null(loop);
	*s = (struct seen){.loop = loop};
	int err = 1;
	struct pg_conn *c = pg_conn_new(loop, &quiet, ci, on_state, s, &err);
	cr_assert_not_null(c);
	cr_assert_eq(err, 0);
	return c;
}

/* The same to the test's server. */
static struct pg_conn *connect_to_srv(struct seen *s)
{
	char ci[160];
	pg_server_conninfo(&srv, ci, sizeof ci);
	return connect_with(s, ci);
}

Test(pg_conn, statements_are_pipelined_and_answered_in_order, .init = setup, .fini = teardown)
{
	struct seen s;
	struct pg_conn *c = connect_to_srv(&s);
	struct evloop *loop = s.loop;
	/* Queued before the connection is up: they go when it is. */
	query(c, &s, 0, "CREATE TABLE t (k int PRIMARY KEY, v bytea)");
	cr_assert_eq(pg_conn_sync(c), 0);
	query(c, &s, 1, "BEGIN");
	ctx[2] = (struct answer_ctx){&s, 2};
	for (int i = 1; i <= 1000; i++) {
		char k[16];
		snprintf(k, sizeof k, "%d", i);
		const char *values[2] = {k, "\x83\x61\x07"};
		int lengths[2] = {0, 3};
		int formats[2] = {0, 1};
		cr_assert_eq(pg_conn_query(c, "INSERT INTO t VALUES ($1, $2)", 2, values, lengths, formats, 0,
					   on_result, &ctx[2]), 0);
	}
	query(c, &s, 3, "COMMIT");
	query(c, &s, 4, "SELECT count(*) FROM t");
	cr_assert_eq(pg_conn_sync(c), 0);
	cr_assert_eq(pg_conn_pending(c), 1 + 1 + 1000 + 2);
	wait_answers(&s, 1 + 1 + 1000 + 2);
	cr_assert_eq(s.ups, 1);
	cr_assert_eq(s.status[0], PGRES_COMMAND_OK);
	cr_assert_eq(s.status[2], PGRES_COMMAND_OK);
	cr_assert_eq(s.status[3], PGRES_COMMAND_OK);
	cr_assert_eq(s.status[4], PGRES_TUPLES_OK);
	cr_assert_str_eq(s.value[4], "1000");
	cr_assert_eq(pg_conn_pending(c), 0);

	/* Binary parameters come back as they went. */
	const char *values[1] = {"7"};
	ctx[5] = (struct answer_ctx){&s, 5};
	cr_assert_eq(pg_conn_query(c, "SELECT encode(v, 'hex') FROM t WHERE k = $1", 1, values, NULL, NULL, 0,
				   on_result, &ctx[5]), 0);
	cr_assert_eq(pg_conn_sync(c), 0);
	wait_answers(&s, 1005);
	cr_assert_str_eq(s.value[5], "836107");
	pg_conn_free(c);
	evloop_free(loop);
}

Test(pg_conn, an_error_aborts_the_rest_of_its_batch_only, .init = setup, .fini = teardown)
{
	struct seen s;
	struct pg_conn *c = connect_to_srv(&s);
	struct evloop *loop = s.loop;
	query(c, &s, 0, "SELECT 1");
	query(c, &s, 1, "SELECT * FROM no_such_table");
	query(c, &s, 2, "SELECT 2");
	cr_assert_eq(pg_conn_sync(c), 0);
	query(c, &s, 3, "SELECT 3");
	cr_assert_eq(pg_conn_sync(c), 0);
	wait_answers(&s, 4);
	cr_assert_eq(s.status[0], PGRES_TUPLES_OK);
	cr_assert_eq(s.status[1], PGRES_FATAL_ERROR);
	cr_assert_eq(s.status[2], PGRES_PIPELINE_ABORTED);
	cr_assert_eq(s.status[3], PGRES_TUPLES_OK);
	cr_assert_str_eq(s.value[3], "3");
	cr_assert_eq(s.nulls, 0);
	pg_conn_free(c);
	evloop_free(loop);
}

Test(pg_conn, a_conninfo_libpq_cannot_parse_is_refused)
{
	struct evloop *loop = evloop_new();
	int err = 0;
	cr_assert_null(pg_conn_new(loop, &quiet, "host=127.0.0.1 no_such_option=1", NULL, NULL, &err));
	cr_assert_eq(err, -EINVAL);
	evloop_free(loop);
}

Test(pg_conn, a_server_that_goes_and_comes_back, .init = setup, .fini = teardown)
{
	struct seen s;
	struct pg_conn *c = connect_to_srv(&s);
	struct evloop *loop = s.loop;
	query(c, &s, 0, "SELECT 1");
	cr_assert_eq(pg_conn_sync(c), 0);
	wait_answers(&s, 1);
	cr_assert_eq(s.ups, 1);

	/* Gone: what is in flight fails — NULL, or the error the server sent
	 * as it shut down — and the owner is told. */
	pg_server_cmd(&srv, "halt");
	query(c, &s, 1, "SELECT pg_sleep(0.1)");
	cr_assert_eq(pg_conn_sync(c), 0);
	wait_answers(&s, 2);
	cr_assert_eq(s.status[1], PGRES_FATAL_ERROR, "%s", PQresStatus(s.status[1]));
	if (s.downs == 0) {
		s.wait_down = true;
		sn_run_loop(loop, 15000);
		s.wait_down = false;
	}
	cr_assert_eq(s.downs, 1);
	cr_assert_not(pg_conn_up(c));

	/* Back on the same port: the connection comes up by itself. */
	pg_server_cmd(&srv, "start");
	wait_up(&s, 2);
	query(c, &s, 2, "SELECT 42");
	cr_assert_eq(pg_conn_sync(c), 0);
	wait_answers(&s, 3);
	cr_assert_str_eq(s.value[2], "42");
	pg_conn_free(c);
	evloop_free(loop);
}

Test(pg_conn, freed_with_statements_in_flight_answers_them, .init = setup, .fini = teardown)
{
	struct seen s;
	struct pg_conn *c = connect_to_srv(&s);
	struct evloop *loop = s.loop;
	for (int i = 0; i < 10; i++)
		query(c, &s, i, "SELECT pg_sleep(10)");
	cr_assert_eq(pg_conn_sync(c), 0);
	pg_conn_free(c);
	cr_assert_eq(s.answered, 10);
	cr_assert_eq(s.nulls, 10);
	evloop_free(loop);
}

/* Freed (or lost) with statements out and statements not yet sent: each
 * is answered NULL, and the owner can tell the ones that never left —
 * which certainly did not run — from the ones whose outcome is not
 * known. */
Test(pg_conn, statements_never_sent_are_told_apart_when_failed, .init = setup, .fini = teardown)
{
	struct seen s;
	struct pg_conn *c = connect_to_srv(&s);
	struct evloop *loop = s.loop;
	query(c, &s, 0, "SELECT 1");
	cr_assert_eq(pg_conn_sync(c), 0);
	wait_answers(&s, 1);
	for (int i = 1; i <= 3; i++)
		query(c, &s, i, "SELECT pg_sleep(10)");
	cr_assert_eq(pg_conn_sync(c), 0); /* up: these go out now */
	for (int i = 4; i <= 5; i++)
		query(c, &s, i, "SELECT 2"); /* no sync: these wait */
	s.conn = c;
	pg_conn_free(c);
	cr_assert_eq(s.nulls, 5);
	for (int i = 1; i <= 5; i++)
		cr_assert_eq(s.unsent[i], i >= 4, "statement %d", i);
	evloop_free(loop);
}

static const struct pg_prepared add_one = {"t_add_one", "SELECT v + 1 FROM t WHERE k = $1::integer", 1};

static void query_prepared(struct pg_conn *c, struct seen *s, int index, const char *k)
{
	ctx[index] = (struct answer_ctx){s, index};
	const char *values[1] = {k};
	cr_assert_eq(pg_conn_query_prepared(c, &add_one, values, NULL, NULL, 0, on_result, &ctx[index]), 0);
}

Test(pg_conn, a_prepared_statement_is_prepared_again_when_refused_and_after_a_reconnect, .init = setup,
     .fini = teardown)
{
	struct seen s;
	struct pg_conn *c = connect_to_srv(&s);
	struct evloop *loop = s.loop;
	/* Its table does not exist yet: the prepare is refused, and so is the
	 * execution in the same batch. */
	query_prepared(c, &s, 0, "1");
	cr_assert_eq(pg_conn_sync(c), 0);
	wait_answers(&s, 1);
	cr_assert_eq(s.status[0], PGRES_PIPELINE_ABORTED, "the batch ends at the failed prepare");
	query(c, &s, 1, "CREATE TABLE t (k int PRIMARY KEY, v int)");
	query(c, &s, 2, "INSERT INTO t VALUES (1, 41), (2, 9)");
	cr_assert_eq(pg_conn_sync(c), 0);
	/* Prepared again at its next use, then executed by name. */
	query_prepared(c, &s, 3, "1");
	query_prepared(c, &s, 4, "2");
	cr_assert_eq(pg_conn_sync(c), 0);
	wait_answers(&s, 5);
	cr_assert_eq(s.status[3], PGRES_TUPLES_OK);
	cr_assert_str_eq(s.value[3], "42");
	cr_assert_str_eq(s.value[4], "10");
	cr_assert_eq(pg_conn_pending(c), 0, "a prepare is not a statement of the caller's");
	/* A new connection has no prepared statements: it prepares again. */
	pg_server_cmd(&srv, "halt");
	query(c, &s, 5, "SELECT 1");
	cr_assert_eq(pg_conn_sync(c), 0);
	wait_answers(&s, 6);
	if (s.downs == 0) {
		s.wait_down = true;
		sn_run_loop(loop, 15000);
		s.wait_down = false;
	}
	pg_server_cmd(&srv, "start");
	wait_up(&s, 2);
	query_prepared(c, &s, 6, "1");
	cr_assert_eq(pg_conn_sync(c), 0);
	wait_answers(&s, 7);
	cr_assert_eq(s.status[6], PGRES_TUPLES_OK);
	cr_assert_str_eq(s.value[6], "42");
	pg_conn_free(c);
	evloop_free(loop);
}

/* A port on 127.0.0.1 where nobody listens: a socket bound to it and
 * closed again (a connection there is refused at once). */
static int refusing_port(void)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	cr_assert_geq(fd, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	cr_assert_eq(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
	socklen_t len = sizeof a;
	cr_assert_eq(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	close(fd);
	return ntohs(a.sin_port);
}

/* The conninfo names two hosts and the first refuses (a primary that
 * crashed): libpq goes on to the second with a new socket, which often
 * gets the number of the one it closed. It is watched all the same and
 * the connection comes up. */
Test(pg_conn, the_next_host_of_the_list_is_tried_when_the_first_refuses, .init = setup, .fini = teardown)
{
	char ci[200];
	snprintf(ci, sizeof ci,
		 "host=127.0.0.1,127.0.0.1 port=%d,%d user=postgres dbname=postgres target_session_attrs=read-write",
		 refusing_port(), srv.port);
	struct seen s;
	struct pg_conn *c = connect_with(&s, ci);
	struct evloop *loop = s.loop;
	query(c, &s, 0, "SELECT 7");
	cr_assert_eq(pg_conn_sync(c), 0);
	wait_answers(&s, 1);
	cr_assert_eq(s.ups, 1);
	cr_assert_str_eq(s.value[0], "7");
	pg_conn_free(c);
	evloop_free(loop);
}

/* A server that takes the connection and never answers (paused): the
 * attempt ends at the conninfo's connect_timeout, libpq's own being
 * ignored for a connection made step by step, and is tried again. */
Test(pg_conn, an_attempt_that_hangs_ends_at_connect_timeout, .init = setup, .fini = teardown)
{
	pg_server_cmd(&srv, "pause");
	char ci[200];
	snprintf(ci, sizeof ci, "host=127.0.0.1 port=%d user=postgres dbname=postgres connect_timeout=2", srv.port);
	struct seen s;
	struct pg_conn *c = connect_with(&s, ci);
	struct evloop *loop = s.loop;
	query(c, &s, 0, "SELECT 1");
	cr_assert_eq(pg_conn_sync(c), 0);
	uint64_t t0 = evloop_clock_ms();
	wait_answers(&s, 1); /* answered NULL when the attempt is given up */
	uint64_t took = evloop_clock_ms() - t0;
	cr_assert_eq(s.nulls, 1);
	cr_assert_geq(took, 1900, "gave up after %llu ms", (unsigned long long)took);
	cr_assert_lt(took, 8000, "gave up after %llu ms", (unsigned long long)took);
	/* Resumed: the next attempt comes up. */
	pg_server_cmd(&srv, "resume");
	wait_up(&s, 1);
	pg_conn_free(c);
	evloop_free(loop);
}

/* The first host of the list takes the connection and never answers (a
 * paused server: a primary cut off, say); the second is up. The attempt
 * ends at connect_timeout and the next one begins past the host that
 * hung: the connection comes up on the second. */
Test(pg_conn, a_host_that_hangs_does_not_keep_the_next_one_untried, .init = setup, .fini = teardown)
{
	struct pg_server hung;
	pg_server_start(&hung);
	pg_server_cmd(&hung, "pause");
	char ci[200];
	snprintf(ci, sizeof ci,
		 "host=127.0.0.1,127.0.0.1 port=%d,%d user=postgres dbname=postgres connect_timeout=2", hung.port,
		 srv.port);
	struct seen s;
	struct pg_conn *c = connect_with(&s, ci);
	struct evloop *loop = s.loop;
	wait_up(&s, 1);
	query(c, &s, 0, "SELECT 9");
	cr_assert_eq(pg_conn_sync(c), 0);
	wait_answers(&s, 1);
	cr_assert_str_eq(s.value[0], "9");
	pg_conn_free(c);
	evloop_free(loop);
	pg_server_stop(&hung);
}

/* A server that freezes (paused: its kernel still takes the bytes, no
 * reset comes) while a statement is out: with an answer timeout the
 * connection is given up when nothing came back in time — the statement
 * answered NULL, the owner told — and a new one comes up once the server
 * answers again. */
Test(pg_conn, a_server_that_answers_nothing_in_time_is_given_up, .init = setup, .fini = teardown)
{
	struct seen s;
	struct pg_conn *c = connect_to_srv(&s);
	struct evloop *loop = s.loop;
	pg_conn_set_answer_timeout(c, 1000);
	query(c, &s, 0, "SELECT 1");
	cr_assert_eq(pg_conn_sync(c), 0);
	wait_answers(&s, 1);
	cr_assert_str_eq(s.value[0], "1");
	pg_server_cmd(&srv, "pause");
	query(c, &s, 1, "SELECT 2");
	cr_assert_eq(pg_conn_sync(c), 0);
	uint64_t t0 = evloop_clock_ms();
	wait_answers(&s, 2);
	uint64_t took = evloop_clock_ms() - t0;
	cr_assert_eq(s.nulls, 1, "given up, not answered");
	cr_assert_geq(took, 900, "after %llu ms", (unsigned long long)took);
	cr_assert_eq(s.downs, 1);
	pg_server_cmd(&srv, "resume");
	wait_up(&s, 2);
	query(c, &s, 2, "SELECT 3");
	cr_assert_eq(pg_conn_sync(c), 0);
	wait_answers(&s, 3);
	cr_assert_str_eq(s.value[2], "3");
	pg_conn_free(c);
	evloop_free(loop);
}
