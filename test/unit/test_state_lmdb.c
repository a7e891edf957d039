/*
 * test_state_lmdb.c — the LMDB state store on real files: writes commit
 * and are reported in order, loads see them, deletes, restarts, the lock
 * against a second process, types kept apart, ids too long for a key, and
 * closing with work in flight.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <lmdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/evloop.h"
#include "base/log.h"
#include "store/state_lmdb.h"
#include "store/state_lmdb_records.h"
#include "unit_helpers.h"

static const struct logger quiet = {.min_level = LOG_ERROR, .out = NULL};

static void make_tmp(char *out, size_t n)
{
	snprintf(out, n, "/tmp/sn-lmdb-XXXXXX");
	cr_assert_not_null(mkdtemp(out));
}

static void remove_tmp(const char *dir)
{
	char cmd[256];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	cr_assert_eq(system(cmd), 0);
}

/* What the callbacks saw. */
struct seen {
	struct evloop *loop;
	uint64_t written_upto;
	int written_calls;
	int failed;
	bool upto_went_back;
	uint64_t wait_upto; /* stop the loop once written up to this */
	int loads;          /* answers */
	int wait_loads;     /* stop the loop at this many answers */
	uint64_t last_token;
	int last_found;
	char last_state[2048];
	size_t last_len;
	/* the last scan's answer */
	int scans;
	int scan_status;
	bool scan_more;
	char *scan_chunk; /* malloc'ed copy */
	size_t scan_len;
	char scan_key[STATE_LMDB_KEY_MAX];
	size_t scan_key_len;
};

static void on_written(void *arg, uint64_t upto, int status)
{
	struct seen *s = arg;
	if (upto <= s->written_upto)
		s->upto_went_back = true;
	s->written_upto = upto;
	s->written_calls++;
	if (status != 0)
		s->failed++;
	if (s->wait_upto && upto >= s->wait_upto)
		evloop_stop(s->loop);
}

static void on_loaded(void *arg, uint64_t token, int found, const char *state, size_t len)
{
	struct seen *s = arg;
	s->loads++;
	s->last_token = token;
	s->last_found = found;
	s->last_len = len;
	if (found == 1) {
		cr_assert_leq(len, sizeof s->last_state);
		memcpy(s->last_state, state, len);
	} else {
		cr_assert_null(state);
	}
	if (s->wait_loads && s->loads >= s->wait_loads)
		evloop_stop(s->loop);
}

static void on_scanned(void *arg, uint64_t token, int status, const char *chunk, size_t len, bool more,
		       const char *last_key, size_t last_key_len)
{
	struct seen *s = arg;
	s->scans++;
	s->last_token = token;
	s->scan_status = status;
	s->scan_more = more;
	free(s->scan_chunk);
	s->scan_chunk = NULL;
	s->scan_len = len;
	if (status == 0) {
		s->scan_chunk = malloc(len);
		cr_assert_not_null(s->scan_chunk);
		memcpy(s->scan_chunk, chunk, len);
		cr_assert_leq(last_key_len, sizeof s->scan_key);
		memcpy(s->scan_key, last_key, last_key_len);
		s->scan_key_len = last_key_len;
	}
	evloop_stop(s->loop);
}

static void wait_written(struct seen *s, uint64_t upto)
{
	if (s->written_upto >= upto)
		return;
	s->wait_upto = upto;
	sn_run_loop(s->loop, 10000);
	s->wait_upto = 0;
	cr_assert_geq(s->written_upto, upto);
}

/* Loads (shard, id) and waits for the answer. Returns `found`. */
static int load_one(struct state_lmdb_type *t, struct seen *s, uint32_t shard, const char *id, size_t id_len)
{
	int before = s->loads;
	cr_assert_eq(state_lmdb_load(t, shard, id, id_len, 4242), 0);
	s->wait_loads = before + 1;
	sn_run_loop(s->loop, 10000);
	s->wait_loads = 0;
	cr_assert_eq(s->loads, before + 1);
	cr_assert_eq(s->last_token, 4242);
	return s->last_found;
}

struct fixture {
	char dir[64];
	struct evloop *loop;
	struct state_lmdb *store;
	struct state_lmdb_type *type;
	struct seen seen;
};

static void fixture_open(struct fixture *f)
{
	int err = 1;
	f->store = state_lmdb_open(f->dir, f->loop, &quiet, &err);
	cr_assert_not_null(f->store, "open: %d", err);
	cr_assert_eq(err, 0);
	f->type = state_lmdb_type_open(f->store, "counter", on_written, on_loaded, on_scanned, &f->seen, &err);
	cr_assert_not_null(f->type, "type open: %d", err);
	f->seen.written_upto = 0;
}

static void fixture_close(struct fixture *f)
{
	state_lmdb_type_close(f->type);
	state_lmdb_free(f->store);
	f->store = NULL;
	f->type = NULL;
}

static void fixture_setup(struct fixture *f)
{
	memset(f, 0, sizeof *f);
	make_tmp(f->dir, sizeof f->dir);
	f->loop = evloop_new();
	cr_assert_not_null(f->loop);
	f->seen.loop = f->loop;
	fixture_open(f);
}

static void fixture_teardown(struct fixture *f)
{
	free(f->seen.scan_chunk);
	fixture_close(f);
	evloop_free(f->loop);
	remove_tmp(f->dir);
}

/* A state as the region stores it: an Erlang term with its version byte. */
static const char small_int_7[] = {(char)131, 97, 7};
static const char small_int_8[] = {(char)131, 97, 8};
static const char id_a[] = {109, 0, 0, 0, 1, 'a'}; /* <<"a">> */
static const char id_b[] = {109, 0, 0, 0, 1, 'b'};

Test(state_lmdb, creates_the_environment_under_data_dir)
{
	struct fixture f;
	fixture_setup(&f);
	char path[128];
	struct stat st;
	snprintf(path, sizeof path, "%s/state.lmdb/data.mdb", f.dir);
	cr_assert_eq(stat(path, &st), 0, "%s", path);
	snprintf(path, sizeof path, "%s/state.lmdb/owner.lock", f.dir);
	cr_assert_eq(stat(path, &st), 0, "%s", path);
	fixture_teardown(&f);
}

Test(state_lmdb, a_committed_write_is_loaded_and_a_delete_removes_it)
{
	struct fixture f;
	fixture_setup(&f);
	cr_assert_eq(load_one(f.type, &f.seen, 3, id_a, sizeof id_a), 0);

	uint64_t seq = 0;
	cr_assert_eq(state_lmdb_write(f.type, 3, id_a, sizeof id_a, small_int_7, sizeof small_int_7, &seq), 0);
	cr_assert_eq(seq, 1);
	cr_assert_eq(state_lmdb_last_queued(f.store), 1);
	wait_written(&f.seen, 1);
	cr_assert_eq(f.seen.failed, 0);
	cr_assert_eq(load_one(f.type, &f.seen, 3, id_a, sizeof id_a), 1);
	cr_assert_eq(f.seen.last_len, sizeof small_int_7);
	cr_assert_arr_eq(f.seen.last_state, small_int_7, sizeof small_int_7);

	/* The same id in another shard, and another id in the same shard, are
	 * other records. */
	cr_assert_eq(load_one(f.type, &f.seen, 4, id_a, sizeof id_a), 0);
	cr_assert_eq(load_one(f.type, &f.seen, 3, id_b, sizeof id_b), 0);

	cr_assert_eq(state_lmdb_write(f.type, 3, id_a, sizeof id_a, NULL, 0, &seq), 0);
	cr_assert_eq(seq, 2);
	wait_written(&f.seen, 2);
	cr_assert_eq(load_one(f.type, &f.seen, 3, id_a, sizeof id_a), 0);
	/* Deleting what is not stored is no error. */
	cr_assert_eq(state_lmdb_write(f.type, 9, id_b, sizeof id_b, NULL, 0, &seq), 0);
	wait_written(&f.seen, 3);
	cr_assert_eq(f.seen.failed, 0);
	fixture_teardown(&f);
}

Test(state_lmdb, many_writes_commit_in_order_in_few_transactions)
{
	struct fixture f;
	fixture_setup(&f);
	enum { N = 20000 };
	for (int i = 0; i < N; i++) {
		char id[8] = {98, 0, 0, 0, 0};
		id[1] = (char)(i >> 24);
		id[2] = (char)(i >> 16);
		id[3] = (char)(i >> 8);
		id[4] = (char)i;
		char state[3] = {(char)131, 97, (char)(i & 0xff)};
		uint64_t seq;
		cr_assert_eq(state_lmdb_write(f.type, (uint32_t)(i % 100), id, 5, state, 3, &seq), 0);
		cr_assert_eq(seq, (uint64_t)i + 1);
	}
	wait_written(&f.seen, N);
	cr_assert_eq(f.seen.written_upto, N);
	cr_assert_not(f.seen.upto_went_back);
	cr_assert_eq(f.seen.failed, 0);
	/* Group commit: far fewer commits than writes (each is an fsync). */
	cr_assert_lt(f.seen.written_calls, N / 10, "%d commits for %d writes", f.seen.written_calls, N);
	char id[8] = {98, 0, 0, 0x30, 0x39}; /* 12345 */
	cr_assert_eq(load_one(f.type, &f.seen, 12345 % 100, id, 5), 1);
	cr_assert_eq((unsigned char)f.seen.last_state[2], 12345 & 0xff);
	fixture_teardown(&f);
}

/* Committed ops go back to the loop and are filled again: one with room
 * is reused, one too small is replaced; the hand-back keeps at most `max`
 * and gives back the rest; take moves them only into an empty list. */
Test(state_lmdb, write_ops_are_filled_again_within_their_room_and_bound)
{
	struct write_ops ops = {0}, spent = {0};
	char small[3] = {(char)131, 97, 1}, big[600];
	memset(big, 0, sizeof big);
	big[0] = (char)131;
	big[1] = 109; /* BINARY_EXT, 590 bytes */
	big[2] = big[3] = 0;
	big[4] = 2;
	big[5] = (char)78;
	struct write_op *a = state_lmdb_record_put(&ops, 1, 7, "\x61\x01", 2, small, sizeof small);
	struct write_op *b = state_lmdb_record_put(&ops, 1, 7, "\x61\x02", 2, small, sizeof small);
	cr_assert(a != NULL && b != NULL);
	a->next = b;
	cr_assert_null(state_lmdb_write_ops_keep(&spent, a, b, 2, 3), "two fit under three");
	cr_assert_eq(spent.n, 2u);
	struct write_op *c = state_lmdb_record_put(NULL, 1, 7, "\x61\x03", 2, small, sizeof small);
	struct write_op *d = state_lmdb_record_put(NULL, 1, 7, "\x61\x04", 2, small, sizeof small);
	c->next = d;
	cr_assert_eq(state_lmdb_write_ops_keep(&spent, c, d, 2, 3), c, "four would be over three: given back");
	free(c);
	free(d);
	state_lmdb_write_ops_take(&ops, &spent);
	cr_assert_eq(ops.free, a);
	cr_assert_null(spent.free);
	/* The first spare has room for a small record: it is the one filled. */
	struct write_op *e = state_lmdb_record_put(&ops, 2, 9, "\x61\x05", 2, small, sizeof small);
	cr_assert_eq(e, a);
	cr_assert_eq(e->dbi, 2u);
	cr_assert_eq(e->kind, WRITE_PUT);
	cr_assert_eq(e->val_len, sizeof small);
	cr_assert_null(e->next);
	/* The next one (b) has no room for 600 bytes: replaced. */
	struct write_op *f = state_lmdb_record_put(&ops, 2, 9, "\x61\x06", 2, big, sizeof big);
	cr_assert_not_null(f);
	cr_assert_geq(f->room, f->key_len + f->val_len);
	cr_assert_null(ops.free);
	cr_assert_eq(memcmp(f->data + f->key_len, big, sizeof big), 0);
	free(e);
	free(f);
	state_lmdb_write_ops_clear(&ops);
}

/* Writes of growing size after many small ones (ops filled again, some
 * too small and replaced) are all stored as written. */
Test(state_lmdb, reused_write_ops_store_every_size_as_written)
{
	struct fixture f;
	fixture_setup(&f);
	enum { N = 3000 };
	static char state[2000];
	for (int i = 0; i < N; i++) {
		char id[5] = {98, 0, 0, (char)(i >> 8), (char)i};
		size_t len = 6 + (size_t)(i % 7 == 0 ? i % 1900 : 0);
		state[0] = (char)131;
		state[1] = 109; /* BINARY_EXT */
		state[2] = state[3] = 0;
		state[4] = (char)((len - 6) >> 8);
		state[5] = (char)(len - 6);
		memset(state + 6, i & 0x7f, len - 6);
		uint64_t seq;
		cr_assert_eq(state_lmdb_write(f.type, 3, id, 5, state, len, &seq), 0);
		if (i % 500 == 499)
			wait_written(&f.seen, (uint64_t)i + 1);
	}
	wait_written(&f.seen, N);
	cr_assert_eq(f.seen.failed, 0);
	for (int i = N - 50; i < N; i++) {
		char id[5] = {98, 0, 0, (char)(i >> 8), (char)i};
		cr_assert_eq(load_one(f.type, &f.seen, 3, id, 5), 1);
		size_t len = 6 + (size_t)(i % 7 == 0 ? i % 1900 : 0);
		cr_assert_eq(f.seen.last_len, len, "record %d", i);
		if (len > 6)
			cr_assert_eq((unsigned char)f.seen.last_state[len - 1], (unsigned char)(i & 0x7f));
	}
	fixture_teardown(&f);
}

Test(state_lmdb, states_survive_closing_and_reopening)
{
	struct fixture f;
	fixture_setup(&f);
	uint64_t seq;
	cr_assert_eq(state_lmdb_write(f.type, 1, id_a, sizeof id_a, small_int_7, sizeof small_int_7, &seq), 0);
	cr_assert_eq(state_lmdb_write(f.type, 1, id_a, sizeof id_a, small_int_8, sizeof small_int_8, &seq), 0);
	/* Not waited for: closing commits what is queued. */
	fixture_close(&f);
	fixture_open(&f);
	cr_assert_eq(load_one(f.type, &f.seen, 1, id_a, sizeof id_a), 1);
	cr_assert_arr_eq(f.seen.last_state, small_int_8, sizeof small_int_8);
	fixture_teardown(&f);
}

Test(state_lmdb, a_second_open_of_the_same_dir_is_refused)
{
	struct fixture f;
	fixture_setup(&f);
	int err = 0;
	cr_assert_null(state_lmdb_open(f.dir, f.loop, &quiet, &err));
	cr_assert_eq(err, -EWOULDBLOCK);
	fixture_teardown(&f);
}

Test(state_lmdb, a_dir_that_cannot_be_made_is_an_error)
{
	struct evloop *loop = evloop_new();
	int err = 0;
	cr_assert_null(state_lmdb_open("/proc/no/such/dir", loop, &quiet, &err));
	cr_assert_lt(err, 0);
	evloop_free(loop);
}

Test(state_lmdb, types_are_kept_apart)
{
	struct fixture f;
	fixture_setup(&f);
	struct seen kv_seen = {.loop = f.loop};
	int err = 0;
	struct state_lmdb_type *kv = state_lmdb_type_open(f.store, "kv", on_written, on_loaded, on_scanned, &kv_seen, &err);
	cr_assert_not_null(kv);
	cr_assert_null(state_lmdb_type_open(f.store, "kv", on_written, on_loaded, on_scanned, &kv_seen, &err));
	cr_assert_eq(err, -EINVAL);

	uint64_t seq;
	cr_assert_eq(state_lmdb_write(f.type, 0, id_a, sizeof id_a, small_int_7, sizeof small_int_7, &seq), 0);
	wait_written(&f.seen, seq);
	/* Every open type hears of every commit. */
	cr_assert_eq(kv_seen.written_upto, seq);
	cr_assert_eq(load_one(kv, &kv_seen, 0, id_a, sizeof id_a), 0);
	cr_assert_eq(f.seen.loads, 0);
	cr_assert_eq(load_one(f.type, &f.seen, 0, id_a, sizeof id_a), 1);
	state_lmdb_type_close(kv);
	fixture_teardown(&f);
}

Test(state_lmdb, at_most_node_types_max_types)
{
	struct fixture f;
	fixture_setup(&f);
	struct state_lmdb_type *types[15];
	int err = 0;
	for (int i = 0; i < 15; i++) {
		char name[16];
		snprintf(name, sizeof name, "t%d", i);
		types[i] = state_lmdb_type_open(f.store, name, on_written, on_loaded, on_scanned, &f.seen, &err);
		cr_assert_not_null(types[i], "%s: %d", name, err);
	}
	cr_assert_null(state_lmdb_type_open(f.store, "one_too_many", on_written, on_loaded, on_scanned, &f.seen, &err));
	cr_assert_eq(err, -EINVAL);
	/* A closed type's place is free again. */
	state_lmdb_type_close(types[3]);
	types[3] = state_lmdb_type_open(f.store, "one_too_many", on_written, on_loaded, on_scanned, &f.seen, &err);
	cr_assert_not_null(types[3]);
	for (int i = 0; i < 15; i++)
		state_lmdb_type_close(types[i]);
	fixture_teardown(&f);
}

Test(state_lmdb, ids_too_long_for_a_key_are_stored_by_their_hash)
{
	struct fixture f;
	fixture_setup(&f);
	/* Two binaries of 1000 bytes differing in the last one. */
	enum { LEN = 1005 };
	char *a = calloc(1, LEN), *b = calloc(1, LEN);
	a[0] = b[0] = 109;
	a[3] = b[3] = (char)(1000 >> 8);
	a[4] = b[4] = (char)(1000 & 0xff);
	a[LEN - 1] = 1;
	b[LEN - 1] = 2;
	uint64_t seq;
	cr_assert_eq(state_lmdb_write(f.type, 5, a, LEN, small_int_7, sizeof small_int_7, &seq), 0);
	cr_assert_eq(state_lmdb_write(f.type, 5, b, LEN, small_int_8, sizeof small_int_8, &seq), 0);
	wait_written(&f.seen, seq);
	cr_assert_eq(f.seen.failed, 0);
	cr_assert_eq(load_one(f.type, &f.seen, 5, a, LEN), 1);
	cr_assert_arr_eq(f.seen.last_state, small_int_7, sizeof small_int_7);
	cr_assert_eq(load_one(f.type, &f.seen, 5, b, LEN), 1);
	cr_assert_arr_eq(f.seen.last_state, small_int_8, sizeof small_int_8);
	/* At the limit: 507 id bytes still make a plain key. */
	cr_assert_eq(state_lmdb_write(f.type, 5, a, 507, small_int_8, sizeof small_int_8, &seq), 0);
	cr_assert_eq(state_lmdb_write(f.type, 5, a, 508, small_int_7, sizeof small_int_7, &seq), 0);
	wait_written(&f.seen, seq);
	cr_assert_eq(f.seen.failed, 0);
	cr_assert_eq(load_one(f.type, &f.seen, 5, a, 507), 1);
	cr_assert_arr_eq(f.seen.last_state, small_int_8, sizeof small_int_8);
	cr_assert_eq(load_one(f.type, &f.seen, 5, a, 508), 1);
	cr_assert_arr_eq(f.seen.last_state, small_int_7, sizeof small_int_7);
	free(a);
	free(b);
	fixture_teardown(&f);
}

static void on_loaded_must_not_run(void *arg, uint64_t token, int found, const char *state, size_t len)
{
	(void)arg, (void)token, (void)found, (void)state, (void)len;
	cr_assert_fail("a closed type was answered");
}

Test(state_lmdb, a_closed_type_hears_nothing_and_its_writes_still_commit)
{
	struct fixture f;
	fixture_setup(&f);
	struct seen other = {.loop = f.loop};
	int err;
	struct state_lmdb_type *t = state_lmdb_type_open(f.store, "kv", on_written, on_loaded_must_not_run, on_scanned, &other, &err);
	cr_assert_not_null(t);
	uint64_t seq;
	for (int i = 0; i < 50; i++)
		cr_assert_eq(state_lmdb_load(t, 1, id_a, sizeof id_a, (uint64_t)i), 0);
	cr_assert_eq(state_lmdb_write(t, 1, id_a, sizeof id_a, small_int_7, sizeof small_int_7, &seq), 0);
	state_lmdb_type_close(t);
	int before = other.written_calls;
	/* A later commit is reported to the open type only. */
	cr_assert_eq(state_lmdb_write(f.type, 2, id_b, sizeof id_b, small_int_8, sizeof small_int_8, &seq), 0);
	wait_written(&f.seen, seq);
	cr_assert_eq(other.written_calls, before);
	/* Opened again, the type finds what was queued before it closed. */
	t = state_lmdb_type_open(f.store, "kv", on_written, on_loaded, on_scanned, &other, &err);
	cr_assert_not_null(t);
	cr_assert_eq(load_one(t, &other, 1, id_a, sizeof id_a), 1);
	cr_assert_arr_eq(other.last_state, small_int_7, sizeof small_int_7);
	state_lmdb_type_close(t);
	fixture_teardown(&f);
}

Test(state_lmdb, freed_with_loads_and_writes_in_flight)
{
	struct fixture f;
	fixture_setup(&f);
	uint64_t seq;
	for (int i = 0; i < 1000; i++) {
		cr_assert_eq(state_lmdb_write(f.type, (uint32_t)i, id_a, sizeof id_a, small_int_7, sizeof small_int_7,
					      &seq), 0);
		cr_assert_eq(state_lmdb_load(f.type, (uint32_t)i, id_a, sizeof id_a, (uint64_t)i), 0);
	}
	fixture_close(&f); /* ASan: nothing leaks */
	fixture_open(&f);
	cr_assert_eq(load_one(f.type, &f.seen, 999, id_a, sizeof id_a), 1);
	fixture_teardown(&f);
}

/* Scans the shard from after the last scan's key (from the start when
 * `from_start`) and waits for the answer. */
static void scan_one(struct fixture *f, uint32_t shard, bool from_start, size_t max_bytes)
{
	int before = f->seen.scans;
	cr_assert_eq(state_lmdb_scan(f->type, shard, f->seen.scan_key, from_start ? 0 : f->seen.scan_key_len,
				     max_bytes, 77), 0);
	sn_run_loop(f->loop, 10000);
	cr_assert_eq(f->seen.scans, before + 1);
	cr_assert_eq(f->seen.scan_status, 0);
}

/* The chunk [{Id, State}] the records of ids a..a+n-1 (small integers,
 * state 7) make. */
static size_t expected_chunk(char *out, int a, int n)
{
	size_t k = 0;
	out[k++] = 108;
	out[k++] = 0, out[k++] = 0, out[k++] = 0, out[k++] = (char)n;
	for (int i = 0; i < n; i++) {
		out[k++] = 104, out[k++] = 2;
		out[k++] = 97, out[k++] = (char)(a + i); /* the id: a small integer */
		out[k++] = 97, out[k++] = 7;             /* the state */
	}
	out[k++] = 106;
	return k;
}

Test(state_lmdb, a_scan_gives_a_shards_records_in_chunks)
{
	struct fixture f;
	fixture_setup(&f);
	uint64_t seq;
	/* ids 1..10 in shard 2, id 1 in shards 1 and 3 (not to be seen) */
	for (int i = 1; i <= 10; i++) {
		char id[2] = {97, (char)i};
		cr_assert_eq(state_lmdb_write(f.type, 2, id, 2, small_int_7, sizeof small_int_7, &seq), 0);
	}
	char one[2] = {97, 1};
	cr_assert_eq(state_lmdb_write(f.type, 1, one, 2, small_int_8, sizeof small_int_8, &seq), 0);
	cr_assert_eq(state_lmdb_write(f.type, 3, one, 2, small_int_8, sizeof small_int_8, &seq), 0);
	wait_written(&f.seen, seq);

	char want[128];
	size_t n;
	/* Whole, in one chunk. */
	scan_one(&f, 2, true, 1 << 20);
	n = expected_chunk(want, 1, 10);
	cr_assert_eq(f.seen.scan_len, n);
	cr_assert_arr_eq(f.seen.scan_chunk, want, n);
	cr_assert_not(f.seen.scan_more);

	/* In chunks of at least 20 bytes: 5 + 6 per record, so 3 records (23
	 * bytes) each, then the last one alone. */
	scan_one(&f, 2, true, 20);
	cr_assert(f.seen.scan_more);
	n = expected_chunk(want, 1, 3);
	cr_assert_eq(f.seen.scan_len, n);
	cr_assert_arr_eq(f.seen.scan_chunk, want, n);
	for (int c = 1; c < 3; c++) {
		scan_one(&f, 2, false, 20);
		cr_assert(f.seen.scan_more);
		n = expected_chunk(want, 1 + 3 * c, 3);
		cr_assert_arr_eq(f.seen.scan_chunk, want, n);
	}
	scan_one(&f, 2, false, 20);
	n = expected_chunk(want, 10, 1);
	cr_assert_eq(f.seen.scan_len, n);
	cr_assert_arr_eq(f.seen.scan_chunk, want, n);
	cr_assert_not(f.seen.scan_more);

	/* A shard with no record: []. */
	scan_one(&f, 7, true, 20);
	cr_assert_eq(f.seen.scan_len, 1);
	cr_assert_eq(f.seen.scan_chunk[0], 106);
	cr_assert_not(f.seen.scan_more);
	cr_assert_eq(state_lmdb_scan(f.type, 2, want, STATE_LMDB_KEY_MAX + 1, 20, 1), -EINVAL);
	fixture_teardown(&f);
}

Test(state_lmdb, a_scan_gives_long_ids_back)
{
	struct fixture f;
	fixture_setup(&f);
	enum { LEN = 600 };
	char *id = calloc(1, LEN);
	id[0] = 109;
	id[3] = (char)((LEN - 5) >> 8);
	id[4] = (char)((LEN - 5) & 0xff);
	memset(id + 5, 'x', LEN - 5);
	uint64_t seq;
	cr_assert_eq(state_lmdb_write(f.type, 4, id, LEN, small_int_7, sizeof small_int_7, &seq), 0);
	wait_written(&f.seen, seq);
	scan_one(&f, 4, true, 1 << 20);
	/* [{Id, 7}] */
	cr_assert_eq(f.seen.scan_len, 5 + 2 + LEN + 2 + 1);
	cr_assert_eq(f.seen.scan_chunk[0], 108);
	cr_assert_eq(f.seen.scan_chunk[4], 1);
	cr_assert_eq(f.seen.scan_chunk[5], 104);
	cr_assert_arr_eq(f.seen.scan_chunk + 7, id, LEN);
	cr_assert_eq(f.seen.scan_chunk[7 + LEN], 97);
	cr_assert_eq(f.seen.scan_chunk[8 + LEN], 7);
	free(id);
	fixture_teardown(&f);
}

/* Puts one record straight into the type's database, as damage on disk
 * would leave it; the store must be closed. */
static void put_raw_record(const char *dir, const char *key, size_t key_len, const char *val, size_t val_len)
{
	char path[128];
	snprintf(path, sizeof path, "%s/state.lmdb", dir);
	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi dbi;
	cr_assert_eq(mdb_env_create(&env), 0);
	cr_assert_eq(mdb_env_set_maxdbs(env, 16), 0);
	cr_assert_eq(mdb_env_open(env, path, 0, 0600), 0);
	cr_assert_eq(mdb_txn_begin(env, NULL, 0, &txn), 0);
	cr_assert_eq(mdb_dbi_open(txn, "counter", 0, &dbi), 0);
	MDB_val k = {.mv_size = key_len, .mv_data = (void *)key}, v = {.mv_size = val_len, .mv_data = (void *)val};
	cr_assert_eq(mdb_put(txn, dbi, &k, &v, 0), 0);
	cr_assert_eq(mdb_txn_commit(txn), 0);
	mdb_env_close(env);
}

Test(state_lmdb, a_scan_leaves_damaged_records_out)
{
	struct fixture f;
	fixture_setup(&f);
	uint64_t seq;
	for (int i = 1; i <= 3; i++) {
		char id[2] = {97, (char)i};
		cr_assert_eq(state_lmdb_write(f.type, 2, id, 2, small_int_7, sizeof small_int_7, &seq), 0);
	}
	wait_written(&f.seen, seq);
	fixture_close(&f);
	/* Between ids 1..3 in key order: a state that is no term (tag 255),
	 * a state without its version byte, an id that is no term, and an
	 * id followed by stray bytes. */
	put_raw_record(f.dir, "\0\0\0\2\x61\x01\x00", 7, "\x83\xff", 2);
	put_raw_record(f.dir, "\0\0\0\2\x61\x02\x00", 7, "\x61\x07", 2);
	put_raw_record(f.dir, "\0\0\0\2\xff", 5, "\x83\x61\x07", 3);
	put_raw_record(f.dir, "\0\0\0\2\x61\x03\x61", 7, "\x83\x61\x07", 3);
	fixture_open(&f);
	/* Whole, and record by record: only the three good records, each a
	 * whole valid chunk. */
	char want[128];
	size_t n = expected_chunk(want, 1, 3);
	scan_one(&f, 2, true, 1 << 20);
	cr_assert_eq(f.seen.scan_len, n);
	cr_assert_arr_eq(f.seen.scan_chunk, want, n);
	for (int i = 1; i <= 3; i++) {
		scan_one(&f, 2, i == 1, 1);
		n = expected_chunk(want, i, 1);
		cr_assert_eq(f.seen.scan_len, n, "record %d", i);
		cr_assert_arr_eq(f.seen.scan_chunk, want, n);
	}
	fixture_teardown(&f);
}

Test(state_lmdb, deleting_a_shard_removes_its_records_only)
{
	struct fixture f;
	fixture_setup(&f);
	uint64_t seq;
	for (int i = 1; i <= 50; i++) {
		char id[2] = {97, (char)i};
		for (uint32_t shard = 5; shard <= 7; shard++)
			cr_assert_eq(state_lmdb_write(f.type, shard, id, 2, small_int_7, sizeof small_int_7, &seq), 0);
	}
	cr_assert_eq(state_lmdb_delete_shard(f.type, 6, &seq), 0);
	/* Written after the delete: it stays. */
	char id[2] = {97, 99};
	cr_assert_eq(state_lmdb_write(f.type, 6, id, 2, small_int_8, sizeof small_int_8, &seq), 0);
	wait_written(&f.seen, seq);
	cr_assert_eq(f.seen.failed, 0);
	scan_one(&f, 6, true, 1 << 20);
	const char only[] = {108, 0, 0, 0, 1, 104, 2, 97, 99, 97, 8, 106};
	cr_assert_eq(f.seen.scan_len, sizeof only);
	cr_assert_arr_eq(f.seen.scan_chunk, only, sizeof only);
	char want[512];
	size_t n = expected_chunk(want, 1, 50);
	scan_one(&f, 5, true, 1 << 20);
	cr_assert_arr_eq(f.seen.scan_chunk, want, n);
	scan_one(&f, 7, true, 1 << 20);
	cr_assert_arr_eq(f.seen.scan_chunk, want, n);
	fixture_teardown(&f);
}
