/*
 * test_state_pg.c — the PostgreSQL state store through the state_store
 * interface, against a real server (pg_server.h): the schema made on
 * connect, writes committed in order and few transactions, loads and
 * deletes, the rows as SQL sees them, a server that goes away with a batch
 * out and comes back, cancelled writes.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/evloop.h"
#include "base/log.h"
#include "store/state_pg.h"
#include "pg_server.h"
#include "unit_helpers.h"

static const struct logger quiet = {.min_level = LOG_ERROR, .out = NULL};

static struct pg_server srv;

static void setup(void)
{
	pg_server_start(&srv);
}

static void teardown(void)
{
	pg_server_stop(&srv);
}

struct seen {
	struct evloop *loop;
	int found_by_token[700]; /* many loads at once: 1 found, 0 not, -1 no answer yet */
	uint64_t written_upto;
	int commits, failed;
	bool went_back;
	uint64_t wait_upto;
	int loads, wait_loads;
	int last_found;
	char last_state[64];
	size_t last_len;
};

static void on_written(void *arg, uint64_t upto, int status)
{
	struct seen *s = arg;
	if (upto <= s->written_upto)
		s->went_back = true;
	s->written_upto = upto;
	s->commits++;
	if (status != 0)
		s->failed++;
	if (s->wait_upto && upto >= s->wait_upto)
		evloop_stop(s->loop);
}

static void on_loaded(void *arg, uint64_t token, int found, const char *state, size_t len)
{
	struct seen *s = arg;
	if (token < 700)
		s->found_by_token[token] = found == 1 ? (unsigned char)state[2] : found;
	s->loads++;
	s->last_found = found;
	s->last_len = len;
	if (found == 1) {
		cr_assert_leq(len, sizeof s->last_state);
		memcpy(s->last_state, state, len);
	}
	if (s->wait_loads && s->loads >= s->wait_loads)
		evloop_stop(s->loop);
}

static void on_scanned(void *arg, uint64_t token, int status, const char *chunk, size_t len, bool more,
		       const char *last_key, size_t last_key_len)
{
	(void)arg, (void)token, (void)status, (void)chunk, (void)len, (void)more, (void)last_key, (void)last_key_len;
	cr_assert_fail("a shared store is never scanned");
}

static void wait_written(struct seen *s, uint64_t upto)
{
	if (s->written_upto >= upto)
		return;
	s->wait_upto = upto;
	sn_run_loop(s->loop, 20000);
	s->wait_upto = 0;
}

static int load_one(struct state_store_type *t, struct seen *s, const char *id, size_t id_len)
{
	int before = s->loads;
	cr_assert_eq(state_store_load(t, 0, id, id_len, 9), 0);
	s->wait_loads = before + 1;
	sn_run_loop(s->loop, 20000);
	s->wait_loads = 0;
	return s->last_found;
}

struct fixture {
	struct evloop *loop;
	struct state_store *store;
	struct state_store_type *type;
	struct seen seen;
};

static void open_store(struct fixture *f)
{
	f->loop = evloop_new();
	cr_assert_not_null(f->loop);
	f->seen = (struct seen){.loop = f->loop};
	char ci[160];
	pg_server_conninfo(&srv, ci, sizeof ci);
	int err = 1;
	struct state_pg *pg = state_pg_open(ci, f->loop, &quiet, &err);
	cr_assert_not_null(pg, "%d", err);
	f->store = state_pg_store(pg);
	cr_assert(f->store->shared);
	const struct state_store_callbacks cb = {on_written, on_loaded, on_scanned, &f->seen};
	f->type = state_store_type_open(f->store, "counter", &cb, &err);
	cr_assert_not_null(f->type);
}

static void close_store(struct fixture *f)
{
	state_store_type_close(f->type);
	state_store_free(f->store);
	evloop_free(f->loop);
}

/* psql's answer to `sql` on the test's server, trimmed. */
static void psql(const char *sql, char *out, size_t n)
{
	char line[512];
	snprintf(line, sizeof line, "psql -X -q -t -A -h 127.0.0.1 -p %d -U postgres -c \"%s\"", srv.port, sql);
	FILE *p = popen(line, "r");
	cr_assert_not_null(p);
	if (fgets(out, (int)n, p) == NULL)
		out[0] = 0;
	pclose(p);
	out[strcspn(out, "\n")] = 0;
}

static const char id_a[] = {109, 0, 0, 0, 1, 'a'}; /* <<"a">> */
static const char seven[] = {(char)131, 97, 7};
static const char eight[] = {(char)131, 97, 8};

Test(state_pg, writes_commit_in_order_and_loads_see_them, .init = setup, .fini = teardown)
{
	struct fixture f;
	open_store(&f);
	cr_assert_eq(load_one(f.type, &f.seen, id_a, sizeof id_a), 0);
	uint64_t seq = 0;
	enum { N = 3000 };
	for (int i = 0; i < N; i++) {
		char id[5] = {98, (char)(i >> 24), (char)(i >> 16), (char)(i >> 8), (char)i};
		cr_assert_eq(state_store_write(f.type, (uint32_t)(i % 30), id, sizeof id, seven, sizeof seven, &seq), 0);
		cr_assert_eq(seq, (uint64_t)i + 1);
	}
	cr_assert_eq(state_store_write(f.type, 3, id_a, sizeof id_a, seven, sizeof seven, &seq), 0);
	cr_assert_eq(state_store_write(f.type, 3, id_a, sizeof id_a, eight, sizeof eight, &seq), 0);
	cr_assert_eq(state_store_last_queued(f.store), N + 2);
	wait_written(&f.seen, seq);
	cr_assert_eq(f.seen.written_upto, N + 2);
	cr_assert_eq(f.seen.failed, 0);
	cr_assert_not(f.seen.went_back);
	cr_assert_lt(f.seen.commits, 10, "%d commits", f.seen.commits);
	cr_assert_eq(load_one(f.type, &f.seen, id_a, sizeof id_a), 1);
	cr_assert_arr_eq(f.seen.last_state, eight, sizeof eight);

	char out[128];
	psql("SELECT count(*), sum(revision) FROM shardnode_entity_state WHERE type = 'counter'", out, sizeof out);
	cr_assert_str_eq(out, "3001|3002"); /* id a written twice */
	psql("SELECT shard, encode(state, 'hex') FROM shardnode_entity_state WHERE id = '\\\\x6d0000000161'", out,
	     sizeof out);
	cr_assert_str_eq(out, "3|836108");

	cr_assert_eq(state_store_write(f.type, 3, id_a, sizeof id_a, NULL, 0, &seq), 0);
	wait_written(&f.seen, seq);
	cr_assert_eq(load_one(f.type, &f.seen, id_a, sizeof id_a), 0);
	close_store(&f);
}

Test(state_pg, a_server_that_goes_away_fails_the_batch_out_and_comes_back, .init = setup, .fini = teardown)
{
	struct fixture f;
	open_store(&f);
	uint64_t seq;
	cr_assert_eq(state_store_write(f.type, 1, id_a, sizeof id_a, seven, sizeof seven, &seq), 0);
	wait_written(&f.seen, seq);
	cr_assert_eq(f.seen.failed, 0);

	pg_server_cmd(&srv, "halt");
	cr_assert_eq(state_store_write(f.type, 1, id_a, sizeof id_a, eight, sizeof eight, &seq), 0);
	/* Waits while the server is away; started again, it is written. */
	pg_server_cmd(&srv, "start");
	wait_written(&f.seen, seq);
	cr_assert_not(f.seen.went_back);
	if (f.seen.failed == 0) {
		cr_assert_eq(load_one(f.type, &f.seen, id_a, sizeof id_a), 1);
		cr_assert_arr_eq(f.seen.last_state, eight, sizeof eight);
	}
	/* Either way the store goes on: a new write commits. */
	int failed = f.seen.failed;
	cr_assert_eq(state_store_write(f.type, 1, id_a, sizeof id_a, seven, sizeof seven, &seq), 0);
	wait_written(&f.seen, seq);
	cr_assert_eq(f.seen.failed, failed);
	cr_assert_eq(load_one(f.type, &f.seen, id_a, sizeof id_a), 1);
	cr_assert_arr_eq(f.seen.last_state, seven, sizeof seven);
	close_store(&f);
}

Test(state_pg, cancelled_writes_are_not_written, .init = setup, .fini = teardown)
{
	struct fixture f;
	open_store(&f);
	uint64_t seq;
	/* Queued in the same turn as the cancel: none has gone out yet. */
	cr_assert_eq(state_store_write(f.type, 1, id_a, sizeof id_a, seven, sizeof seven, &seq), 0);
	state_store_cancel_queued(f.type);
	wait_written(&f.seen, seq);
	cr_assert_eq(load_one(f.type, &f.seen, id_a, sizeof id_a), 0);
	cr_assert_eq(state_store_scan(f.type, 1, NULL, 0, 100, 1), -EOPNOTSUPP);
	close_store(&f);
}

Test(state_pg, a_conninfo_libpq_cannot_parse_is_refused)
{
	struct evloop *loop = evloop_new();
	int err = 0;
	cr_assert_null(state_pg_open("host=127.0.0.1 no_such_option=1", loop, &quiet, &err));
	cr_assert_eq(err, -EINVAL);
	evloop_free(loop);
}

Test(state_pg, many_loads_go_out_together_and_each_gets_its_row, .init = setup, .fini = teardown)
{
	struct fixture f;
	open_store(&f);
	uint64_t seq;
	/* Ids 0..299 hold (small integer) i % 200; 300..599 are not stored. */
	for (int i = 0; i < 300; i++) {
		char id[5] = {98, 0, 0, (char)(i >> 8), (char)i};
		char state[3] = {(char)131, 97, (char)(i % 200)};
		cr_assert_eq(state_store_write(f.type, (uint32_t)(i % 7), id, sizeof id, state, sizeof state, &seq), 0);
	}
	wait_written(&f.seen, seq);
	for (int i = 0; i < 600; i++)
		f.seen.found_by_token[i] = -1;
	for (int i = 0; i < 600; i++) {
		char id[5] = {98, 0, 0, (char)(i >> 8), (char)i};
		cr_assert_eq(state_store_load(f.type, (uint32_t)(i % 7), id, sizeof id, (uint64_t)i), 0);
	}
	f.seen.wait_loads = 600;
	sn_run_loop(f.loop, 20000);
	for (int i = 0; i < 600; i++)
		cr_assert_eq(f.seen.found_by_token[i], i < 300 ? i % 200 : 0, "id %d: %d", i, f.seen.found_by_token[i]);
	close_store(&f);
}
