/*
 * state_lmdb_threads.c — the state store's writer and reader threads under
 * ThreadSanitizer (`make tsan`).
 *
 * A plain program, as Criterion's runner cannot run under TSan: it exits 0
 * when every check holds, and TSan (with halt_on_error) fails it on any
 * data race between the threads and the loop. Each round drives what they
 * share: writes queued while the writer commits, loads queued while the
 * reader answers, results and answers handed back through the eventfd, a
 * type closed with loads in flight, and the store freed with writes and
 * loads still queued. The writes of each round are all found by the next.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/evloop.h"
#include "base/log.h"
#include "store/state_lmdb.h"

#define CHECK(cond)                                                                      \
	do {                                                                             \
		if (!(cond)) {                                                           \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
			exit(1);                                                         \
		}                                                                        \
	} while (0)

#define ROUNDS 10
#define WRITES 2000

struct round {
	struct evloop *loop;
	uint64_t written_upto;
	uint64_t wait_upto;
	int loads, found, wait_loads;
};

static void on_written(void *arg, uint64_t upto, int status)
{
	struct round *r = arg;
	CHECK(status == 0);
	CHECK(upto > r->written_upto);
	r->written_upto = upto;
	if (r->wait_upto > 0 && r->loads >= r->wait_loads && r->written_upto >= r->wait_upto)
		evloop_stop(r->loop);
}

static void on_loaded(void *arg, uint64_t token, int found, const char *state, size_t len)
{
	struct round *r = arg;
	(void)token;
	CHECK(found >= 0);
	if (found == 1) {
		CHECK(len == 3 && (unsigned char)state[0] == 131);
		r->found++;
	}
	r->loads++;
	if (r->wait_upto > 0 && r->loads >= r->wait_loads && r->written_upto >= r->wait_upto)
		evloop_stop(r->loop);
}

static void on_scanned(void *arg, uint64_t token, int status, const char *chunk, size_t len, bool more,
		       const char *last_key, size_t last_key_len)
{
	struct round *r = arg;
	(void)token, (void)more, (void)last_key, (void)last_key_len;
	CHECK(status == 0 && len >= 1);
	CHECK((unsigned char)chunk[0] == 108 || (unsigned char)chunk[0] == 106);
	r->loads++;
	if (r->wait_upto > 0 && r->loads >= r->wait_loads && r->written_upto >= r->wait_upto)
		evloop_stop(r->loop);
}

static void on_deadline(struct evloop *loop, void *arg)
{
	(void)arg;
	fprintf(stderr, "state_lmdb_threads: the store did not answer within 10 s\n");
	evloop_stop(loop);
	exit(1);
}

static void id_of(char id[5], int i)
{
	id[0] = 98; /* INTEGER_EXT */
	id[1] = (char)(i >> 24);
	id[2] = (char)(i >> 16);
	id[3] = (char)(i >> 8);
	id[4] = (char)i;
}

struct meta_seen {
	char want;
	int count, wrong;
};

static int on_meta(void *arg, uint32_t shard, const void *meta, size_t len)
{
	struct meta_seen *m = arg;
	m->count++;
	if (shard >= 64 || len != 1 || *(const char *)meta != m->want)
		m->wrong++;
	return 0;
}

int main(void)
{
	char dir[] = "/tmp/sn-lmdb-tsan-XXXXXX";
	CHECK(mkdtemp(dir) != NULL);
	const struct logger quiet = {.min_level = LOG_ERROR, .out = NULL};
	for (int round = 0; round < ROUNDS; round++) {
		struct evloop *loop = evloop_new();
		CHECK(loop != NULL);
		int err = 0;
		struct state_lmdb *s = state_lmdb_open(dir, loop, &quiet, &err);
		CHECK(s != NULL);
		struct round r = {.loop = loop};
		struct state_lmdb_type *t = state_lmdb_type_open(s, "counter", on_written, on_loaded, on_scanned, &r, &err);
		CHECK(t != NULL);
		/* The shards' own records the round before wrote, read back on
		 * the loop's thread while the writer thread is idle. */
		struct meta_seen seen = {.want = (char)(round - 1)};
		CHECK(state_lmdb_shard_meta_read(t, on_meta, &seen) == 0);
		CHECK(seen.count == (round > 0 ? 64 : 0));
		CHECK(seen.wrong == 0);
		struct round other = {.loop = loop};
		struct state_lmdb_type *kv = state_lmdb_type_open(s, "kv", on_written, on_loaded, on_scanned, &other, &err);
		CHECK(kv != NULL);

		/* Loads of what the previous round wrote, interleaved with this
		 * round's writes, so both threads run while the loop queues. */
		uint64_t seq = 0;
		for (int i = 0; i < WRITES; i++) {
			char id[5], state[3] = {(char)131, 97, (char)round};
			id_of(id, i);
			CHECK(state_lmdb_write(t, (uint32_t)(i % 64), id, sizeof id, state, sizeof state, &seq) == 0);
			if (i < 64) {
				char meta = (char)round;
				CHECK(state_lmdb_shard_meta_write(t, (uint32_t)i, &meta, 1, &seq) == 0);
			}
			if (i % 4 == 0)
				CHECK(state_lmdb_load(t, (uint32_t)(i % 64), id, sizeof id, (uint64_t)i) == 0);
			if (i % 16 == 0)
				CHECK(state_lmdb_load(kv, 0, id, sizeof id, (uint64_t)i) == 0);
			if (i % 100 == 0) {
				CHECK(state_lmdb_scan(t, (uint32_t)(i % 64), NULL, 0, 4096, (uint64_t)i) == 0);
				CHECK(state_lmdb_delete_shard(kv, (uint32_t)(i % 64), &seq) == 0);
			}
		}
		r.wait_upto = seq;
		r.wait_loads = WRITES / 4 + WRITES / 100;
		struct evloop_timer deadline;
		evloop_timer_init(&deadline, on_deadline, NULL);
		CHECK(evloop_timer_start(loop, &deadline, 10000) == 0);
		CHECK(evloop_run(loop) == 0);
		CHECK(r.written_upto == seq);
		CHECK(r.loads == WRITES / 4 + WRITES / 100);
		if (round > 0)
			CHECK(r.found == WRITES / 4); /* every id was written before */

		/* A type closed with its loads in flight, then the store freed
		 * with writes and loads queued: the writes still commit. */
		for (int i = 0; i < 200; i++) {
			char id[5];
			id_of(id, i);
			CHECK(state_lmdb_load(kv, 0, id, sizeof id, (uint64_t)i) == 0);
			CHECK(state_lmdb_load(t, 0, id, sizeof id, (uint64_t)i) == 0);
		}
		state_lmdb_type_close(kv);
		for (int i = 0; i < 200; i++) {
			char id[5], state[3] = {(char)131, 97, (char)round};
			id_of(id, WRITES + i);
			CHECK(state_lmdb_write(t, 1, id, sizeof id, state, sizeof state, &seq) == 0);
		}
		evloop_timer_stop(loop, &deadline);
		state_lmdb_type_close(t);
		state_lmdb_free(s);
		evloop_free(loop);
	}
	char cmd[64];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	CHECK(system(cmd) == 0);
	printf("state_lmdb_threads: %d rounds, no race reported\n", ROUNDS);
	return 0;
}
