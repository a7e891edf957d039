/*
 * test_state_pg.c — the PostgreSQL state store through the state_store
 * interface, against a real server (pg_server.h): the schema made on
 * connect, writes committed in order and few transactions, loads and
 * deletes, the rows as SQL sees them, a server that goes away with a batch
 * out and comes back, cancelled writes; claims and fencing between two
 * members' stores on one database.
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

PG_SERVER_FIXTURE

struct seen {
	struct evloop *loop;
	int found_by_token[700]; /* many loads at once: 1 found, 0 not, -1 no answer yet */
	uint64_t written_upto;
	int commits, failed;
	int last_status; /* of the last commit reported */
	bool went_back;
	uint64_t wait_upto;
	int loads, wait_loads;
	int last_found;
	char last_state[64];
	size_t last_len;
	int claimed, wait_claimed;
	int loads_before_claimed; /* loads answered while a claim was out */
	int fenced[64];           /* by shard */
	uint64_t written_when_fenced;
};

static void on_written(void *arg, uint64_t upto, int status)
{
	struct seen *s = arg;
	if (upto <= s->written_upto)
		s->went_back = true;
	s->written_upto = upto;
	s->commits++;
	s->last_status = status;
	if (status != 0)
		s->failed++;
	if (s->wait_upto && upto >= s->wait_upto)
		evloop_stop(s->loop);
}

static void on_claimed(void *arg, uint32_t shard)
{
	(void)shard;
	struct seen *s = arg;
	s->claimed++;
	if (s->wait_claimed && s->claimed >= s->wait_claimed)
		evloop_stop(s->loop);
}

static void on_fenced(void *arg, uint32_t shard)
{
	struct seen *s = arg;
	cr_assert_lt(shard, 64);
	s->fenced[shard]++;
	s->written_when_fenced = s->written_upto;
}

static void on_loaded(void *arg, uint64_t token, int found, const char *state, size_t len)
{
	struct seen *s = arg;
	if (s->wait_claimed && s->claimed < s->wait_claimed)
		s->loads_before_claimed++;
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

/* Claims shards [from, to) and waits until every claim is committed. */
static void claim(struct state_store_type *t, struct seen *s, uint32_t from, uint32_t to)
{
	for (uint32_t shard = from; shard < to; shard++)
		cr_assert_eq(state_store_claim(t, shard), 0);
	s->wait_claimed = s->claimed + (int)(to - from);
	sn_run_loop(s->loop, 20000);
	cr_assert_geq(s->claimed, s->wait_claimed);
	s->wait_claimed = 0;
}

struct fixture {
	struct evloop *loop;
	struct state_store *store;
	struct state_store_type *type;
	struct seen seen;
};

/* A store on the test's server on `loop`, type "counter" open, shards
 * 0..39 claimed unless `claim_none`. */
static void open_store_on(struct fixture *f, struct evloop *loop, bool claim_none)
{
	f->loop = loop;
	f->seen = (struct seen){.loop = f->loop};
	char ci[160];
	pg_server_conninfo(&srv, ci, sizeof ci);
	int err = 1;
	struct state_pg *pg = state_pg_open(ci, f->loop, &quiet, &err);
	cr_assert_not_null(pg, "%d", err);
	f->store = state_pg_store(pg);
	cr_assert(f->store->shared);
	const struct state_store_callbacks cb = {.written = on_written, .loaded = on_loaded, .scanned = on_scanned,
						 .claimed = on_claimed, .fenced = on_fenced, .arg = &f->seen};
	f->type = state_store_type_open(f->store, "counter", &cb, &err);
	cr_assert_not_null(f->type);
	if (!claim_none)
		claim(f->type, &f->seen, 0, 40);
}

static void open_store(struct fixture *f)
{
	struct evloop *loop = evloop_new();
	cr_assert_not_null(loop);
	open_store_on(f, loop, false);
}

static void close_store_only(struct fixture *f)
{
	state_store_type_close(f->type);
	state_store_free(f->store);
}

static void close_store(struct fixture *f)
{
	close_store_only(f);
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

static void stop_loop(struct evloop *loop, void *arg)
{
	(void)arg;
	evloop_stop(loop);
}

/* Turns the loop for about ms: the store sends what is queued. */
static void turn_loop(struct evloop *loop, uint64_t ms)
{
	struct evloop_timer t;
	evloop_timer_init(&t, stop_loop, NULL);
	cr_assert_eq(evloop_timer_start(loop, &t, ms), 0);
	cr_assert_eq(evloop_run(loop), 0);
	evloop_timer_stop(loop, &t);
}

/* Polls psql's answer to `sql` until it is `want`, turning the loop
 * between tries; fails the test after 10 s. */
static void await_psql(struct evloop *loop, const char *sql, const char *want)
{
	char out[64] = "";
	for (uint64_t until = evloop_clock_ms() + 10000; evloop_clock_ms() < until;) {
		psql(sql, out, sizeof out);
		if (strcmp(out, want) == 0)
			return;
		turn_loop(loop, 20);
	}
	cr_assert_fail("%s: %s, not %s", sql, out, want);
}

/* The server crashes while a batch's commit is out (held at the server by
 * another client's lock): whether it committed is not known, and the
 * batch is reported so — never as failed, which would tell callers that
 * nothing was applied. */
Test(state_pg, a_commit_cut_off_by_the_servers_crash_is_unconfirmed, .init = setup, .fini = teardown)
{
	struct fixture f;
	open_store(&f);
	uint64_t seq;
	cr_assert_eq(state_store_write(f.type, 1, id_a, sizeof id_a, seven, sizeof seven, &seq), 0);
	wait_written(&f.seen, seq);
	cr_assert_eq(f.seen.last_status, 0);

	char line[512];
	snprintf(line, sizeof line,
		 "psql -X -q -h 127.0.0.1 -p %d -U postgres -c 'BEGIN' -c 'LOCK TABLE shardnode_entity_state IN "
		 "ACCESS EXCLUSIVE MODE' -c 'SELECT pg_sleep(60)' >/dev/null 2>&1 &",
		 srv.port);
	cr_assert_eq(system(line), 0);
	await_psql(f.loop,
		   "SELECT count(*) FROM pg_locks WHERE granted AND mode = 'AccessExclusiveLock' AND relation = "
		   "'shardnode_entity_state'::regclass",
		   "1");
	cr_assert_eq(state_store_write(f.type, 1, id_a, sizeof id_a, eight, sizeof eight, &seq), 0);
	await_psql(f.loop, "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'", "1");
	pg_server_cmd(&srv, "kill");
	wait_written(&f.seen, seq);
	cr_assert_eq(f.seen.written_upto, seq);
	cr_assert_eq(f.seen.last_status, STATE_STORE_UNCONFIRMED, "%d", f.seen.last_status);
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

Test(state_pg, loads_of_a_shard_wait_for_its_claim_and_unclaimed_shards_are_not_written, .init = setup,
     .fini = teardown)
{
	struct fixture f;
	struct evloop *loop = evloop_new();
	open_store_on(&f, loop, true);
	uint64_t seq = 0;
	cr_assert_eq(state_store_write(f.type, 2, id_a, sizeof id_a, seven, sizeof seven, &seq), -ESTALE,
		     "a shard not claimed is not written");
	/* Queued in the same turn, the load goes out after the claim and is
	 * answered only once it is committed. */
	cr_assert_eq(state_store_claim(f.type, 2), 0);
	cr_assert_eq(state_store_load(f.type, 2, id_a, sizeof id_a, 1), 0);
	f.seen.wait_claimed = 1;
	f.seen.wait_loads = 1;
	sn_run_loop(f.loop, 20000);
	if (f.seen.loads < 1) {
		f.seen.wait_claimed = 0;
		sn_run_loop(f.loop, 20000);
	}
	cr_assert_eq(f.seen.claimed, 1);
	cr_assert_eq(f.seen.loads, 1);
	cr_assert_eq(f.seen.loads_before_claimed, 0);
	cr_assert_eq(state_store_write(f.type, 2, id_a, sizeof id_a, seven, sizeof seven, &seq), 0);
	wait_written(&f.seen, seq);
	cr_assert_eq(f.seen.failed, 0);

	char out[128];
	psql("SELECT version FROM shardnode_schema", out, sizeof out);
	cr_assert_str_eq(out, "2");
	psql("SELECT o.epoch = e.epoch FROM shardnode_shard_owner o JOIN shardnode_entity_state e "
	     "ON o.type = e.type AND o.shard = e.shard WHERE o.type = 'counter' AND o.shard = 2", out, sizeof out);
	cr_assert_str_eq(out, "t", "the row carries its writer's epoch");
	close_store(&f);
}

/* Two members' stores on one database, as after a pause: `old` claimed
 * shard 5 first, `now` claims it since. */
Test(state_pg, a_member_whose_shard_was_claimed_since_is_refused_and_told, .init = setup, .fini = teardown)
{
	struct evloop *loop = evloop_new();
	struct fixture old, now;
	open_store_on(&old, loop, false);
	uint64_t seq;
	cr_assert_eq(state_store_write(old.type, 5, id_a, sizeof id_a, seven, sizeof seven, &seq), 0);
	wait_written(&old.seen, seq);
	cr_assert_eq(old.seen.failed, 0);

	open_store_on(&now, loop, true);
	claim(now.type, &now.seen, 5, 6);
	/* The old owner's next write, and a write of a shard it still owns,
	 * in one batch: the first is refused and reported, the second
	 * commits. */
	static const char id_b[] = {109, 0, 0, 0, 1, 'b'};
	cr_assert_eq(state_store_write(old.type, 5, id_a, sizeof id_a, eight, sizeof eight, &seq), 0);
	cr_assert_eq(state_store_write(old.type, 6, id_b, sizeof id_b, eight, sizeof eight, &seq), 0);
	uint64_t before = old.seen.written_upto;
	wait_written(&old.seen, seq);
	cr_assert_eq(old.seen.failed, 0, "the batch itself commits");
	cr_assert_eq(old.seen.fenced[5], 1);
	cr_assert_eq(old.seen.fenced[6], 0);
	cr_assert_eq(old.seen.written_when_fenced, before, "told before the commit that covers the write");
	cr_assert_eq(state_store_write(old.type, 5, id_a, sizeof id_a, eight, sizeof eight, &seq), -ESTALE,
		     "nor is a later write queued");
	cr_assert_eq(load_one(now.type, &now.seen, id_a, sizeof id_a), 1);
	cr_assert_arr_eq(now.seen.last_state, seven, sizeof seven, "the stale write is not in the store");
	cr_assert_eq(load_one(now.type, &now.seen, id_b, sizeof id_b), 1);

	/* The new owner writes; the old one claims again (its coordinator
	 * says so) and then it is the new owner that is refused. */
	cr_assert_eq(state_store_write(now.type, 5, id_a, sizeof id_a, eight, sizeof eight, &seq), 0);
	wait_written(&now.seen, seq);
	cr_assert_eq(now.seen.fenced[5], 0);
	claim(old.type, &old.seen, 5, 6);
	cr_assert_eq(state_store_write(now.type, 5, id_a, sizeof id_a, seven, sizeof seven, &seq), 0);
	wait_written(&now.seen, seq);
	cr_assert_eq(now.seen.fenced[5], 1);
	cr_assert_eq(load_one(old.type, &old.seen, id_a, sizeof id_a), 1);
	cr_assert_arr_eq(old.seen.last_state, eight, sizeof eight);

	char out[128];
	psql("SELECT count(DISTINCT epoch) FROM shardnode_shard_owner WHERE type = 'counter' AND shard = 5", out,
	     sizeof out);
	cr_assert_str_eq(out, "1");
	close_store_only(&now);
	close_store_only(&old);
	evloop_free(loop);
}
