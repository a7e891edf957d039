/*
 * test_remember.c — the remembered-entity store: sets per shard, and the log
 * that carries them across a restart, read back whole and cut at every byte.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <ei.h>

#include "base/log.h"
#include "etf/phash2.h"
#include "store/remember.h"
#include "unit_helpers.h"

/* Silent: the damaged-log cases warn on purpose. */
static const struct logger quiet = {.min_level = LOG_WARN, .out = NULL};

/* A fresh directory under /tmp, removed by rm_dir. */
static void make_dir(char *out, size_t cap)
{
	snprintf(out, cap, "/tmp/sn_remember_XXXXXX");
	cr_assert_not_null(mkdtemp(out));
}

static void rm_dir(const char *dir)
{
	char cmd[512];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	cr_assert_eq(system(cmd), 0);
}

/* Entity ids in these tests are binaries <<Text>> (canonical as encoded),
 * each in the shard phash2 gives it. */
static size_t encode_id(const char *text, char *out, size_t cap)
{
	size_t n = strlen(text);
	cr_assert(n + 5 <= cap);
	out[0] = (char)ERL_BINARY_EXT;
	out[1] = 0;
	out[2] = 0;
	out[3] = 0;
	out[4] = (char)n;
	memcpy(out + 5, text, n);
	return n + 5;
}

static uint32_t shard_of(const char *text, uint32_t nshards)
{
	char id[64];
	size_t len = encode_id(text, id, sizeof id);
	uint32_t s;
	cr_assert_eq(phash2_range(id, len, nshards, &s), 0);
	return s;
}

static int add_in(struct remember *r, uint32_t shard, const char *text)
{
	char id[64];
	size_t len = encode_id(text, id, sizeof id);
	char *copy = sn_dup_exact(id, len);
	int rc = remember_add(r, shard, copy, len);
	free(copy);
	return rc;
}

static int add(struct remember *r, uint32_t nshards, const char *text)
{
	return add_in(r, shard_of(text, nshards), text);
}

static int del(struct remember *r, uint32_t nshards, const char *text)
{
	char id[64];
	size_t len = encode_id(text, id, sizeof id);
	return remember_remove(r, shard_of(text, nshards), id, len);
}

struct collected {
	char ids[32][32];
	size_t n;
	uint32_t shard, nshards;
};

static void collect(void *arg, const char *id, size_t len)
{
	struct collected *c = arg;
	cr_assert(c->n < 32 && len >= 5 && len - 5 < 32);
	cr_assert_eq((unsigned char)id[0], ERL_BINARY_EXT);
	memcpy(c->ids[c->n], id + 5, len - 5);
	c->ids[c->n][len - 5] = '\0';
	cr_assert_eq(shard_of(c->ids[c->n], c->nshards), c->shard, "%s is in the shard phash2 gives it",
		     c->ids[c->n]);
	c->n++;
}

static int cmp(const void *a, const void *b) { return strcmp(a, b); }

/* Every id in the store, sorted and joined with spaces; checks that each
 * is in its phash2 shard and that the counts agree. */
static void all_ids(const struct remember *r, uint32_t nshards, char *out, size_t cap)
{
	struct collected c = {.n = 0, .nshards = nshards};
	for (uint32_t s = 0; s < nshards; s++) {
		size_t before = c.n;
		c.shard = s;
		remember_each(r, s, collect, &c);
		cr_assert_eq(remember_count(r, s), c.n - before);
	}
	qsort(c.ids, c.n, sizeof c.ids[0], cmp);
	out[0] = '\0';
	for (size_t k = 0; k < c.n; k++) {
		strncat(out, k ? " " : "", cap - strlen(out) - 1);
		strncat(out, c.ids[k], cap - strlen(out) - 1);
	}
}

static void expect_ids(const struct remember *r, uint32_t nshards, const char *want)
{
	char got[1024];
	all_ids(r, nshards, got, sizeof got);
	cr_assert_str_eq(got, want);
}

Test(remember, sets_per_shard_in_memory)
{
	int err;
	struct remember *r = remember_open(NULL, "counter", 4, &quiet, &err);
	cr_assert_not_null(r);
	cr_assert_eq(add(r, 4, "a"), 1);
	cr_assert_eq(add(r, 4, "a"), 0, "already there");
	cr_assert_eq(add(r, 4, "b"), 1);
	cr_assert_eq(add(r, 4, "c"), 1);
	cr_assert_eq(del(r, 4, "a"), 1);
	cr_assert_eq(del(r, 4, "a"), 0);
	cr_assert_eq(del(r, 4, "zz"), 0);
	expect_ids(r, 4, "b c");
	/* The wrong shard for the id, or none at all: refused. */
	cr_assert_eq(add_in(r, (shard_of("d", 4) + 1) % 4, "d"), -EINVAL);
	cr_assert_eq(add_in(r, 4, "d"), -EINVAL);
	cr_assert_eq(remember_remove(r, 4, "x", 1), -EINVAL);
	char junk[] = "not a term";
	cr_assert_eq(remember_add(r, 0, junk, sizeof junk - 1), -EINVAL);
	expect_ids(r, 4, "b c");
	cr_assert_eq(remember_count(r, 99), 0);
	remember_flush(r); /* nothing to write: fine */
	remember_free(r);
	remember_free(NULL);
}

Test(remember, the_log_carries_the_sets_over_a_restart_and_is_compacted)
{
	char dir[64], sub[128], path[192];
	make_dir(dir, sizeof dir);
	snprintf(sub, sizeof sub, "%s/nested/node", dir);
	int err;
	struct remember *r = remember_open(sub, "counter", 8, &quiet, &err);
	cr_assert_not_null(r, "the directory and its parents are created");
	for (int k = 0; k < 10; k++) {
		char id[16];
		snprintf(id, sizeof id, "e%d", k);
		cr_assert_eq(add(r, 8, id), 1);
	}
	cr_assert_eq(del(r, 8, "e3"), 1);
	cr_assert_eq(del(r, 8, "e1"), 1);
	remember_free(r);

	r = remember_open(sub, "counter", 8, &quiet, &err);
	cr_assert_not_null(r);
	expect_ids(r, 8, "e0 e2 e4 e5 e6 e7 e8 e9");
	remember_free(r);

	/* Compacted: a header and 8 add records of 7-byte ids, nothing else. */
	snprintf(path, sizeof path, "%s/counter.entities", sub);
	struct stat st;
	cr_assert_eq(stat(path, &st), 0);
	cr_assert_eq(st.st_size, 8 + 8 * (9 + 7));
	rm_dir(dir);
}

Test(remember, a_changed_number_of_shards_moves_ids_where_their_messages_go)
{
	char dir[64];
	make_dir(dir, sizeof dir);
	int err;
	struct remember *r = remember_open(dir, "counter", 4, &quiet, &err);
	cr_assert_not_null(r);
	const char *ids[] = {"a", "b", "c", "d", "e", "f", "g"};
	for (size_t k = 0; k < SN_ARRAY_LEN(ids); k++)
		cr_assert_eq(add(r, 4, ids[k]), 1);
	remember_free(r);
	r = remember_open(dir, "counter", 7, &quiet, &err);
	cr_assert_not_null(r);
	expect_ids(r, 7, "a b c d e f g"); /* each checked in phash2(Id, 7) */
	remember_free(r);
	rm_dir(dir);
}

Test(remember, a_store_per_type)
{
	char dir[64];
	make_dir(dir, sizeof dir);
	int err;
	struct remember *a = remember_open(dir, "counter", 2, &quiet, &err);
	struct remember *b = remember_open(dir, "kv", 2, &quiet, &err);
	cr_assert(a && b);
	cr_assert_eq(add(a, 2, "x"), 1);
	cr_assert_eq(add(b, 2, "y"), 1);
	remember_free(a);
	remember_free(b);
	a = remember_open(dir, "counter", 2, &quiet, &err);
	b = remember_open(dir, "kv", 2, &quiet, &err);
	expect_ids(a, 2, "x");
	expect_ids(b, 2, "y");
	remember_free(a);
	remember_free(b);
	rm_dir(dir);
}

/* The log of a store with a known history: +alpha +beta -alpha +gamma.
 * Returns its bytes; `ends` gets the offset where each record ends. */
static unsigned char *reference_log(const char *dir, size_t *len, size_t ends[4])
{
	int err;
	struct remember *r = remember_open(dir, "t", 4, &quiet, &err);
	cr_assert_not_null(r);
	cr_assert_eq(add(r, 4, "alpha"), 1);
	cr_assert_eq(add(r, 4, "beta"), 1);
	cr_assert_eq(del(r, 4, "alpha"), 1);
	cr_assert_eq(add(r, 4, "gamma"), 1);
	remember_free(r); /* no reopen: the log keeps its history */
	char path[128];
	snprintf(path, sizeof path, "%s/t.entities", dir);
	FILE *f = fopen(path, "rb");
	cr_assert_not_null(f);
	unsigned char *buf = malloc(4096);
	*len = fread(buf, 1, 4096, f);
	fclose(f);
	/* Each record: op, shard, length (9 bytes), then <<Text>> (5 + n). */
	ends[0] = 8 + 9 + 10;
	ends[1] = ends[0] + 9 + 9;
	ends[2] = ends[1] + 9 + 10;
	ends[3] = ends[2] + 9 + 10;
	cr_assert_eq(*len, ends[3]);
	return buf;
}

static void write_file(const char *dir, const unsigned char *buf, size_t len)
{
	char path[128];
	snprintf(path, sizeof path, "%s/t.entities", dir);
	FILE *f = fopen(path, "wb");
	cr_assert_not_null(f);
	cr_assert_eq(fwrite(buf, 1, len, f), len);
	fclose(f);
}

static struct remember *reopen(const char *dir)
{
	int err;
	struct remember *r = remember_open(dir, "t", 4, &quiet, &err);
	cr_assert_not_null(r);
	return r;
}

Test(remember, a_log_cut_at_every_byte_loads_the_whole_records_before_the_cut)
{
	char dir[64];
	make_dir(dir, sizeof dir);
	size_t len, ends[4];
	unsigned char *log = reference_log(dir, &len, ends);
	for (size_t cut = 0; cut <= len; cut++) {
		write_file(dir, log, cut);
		struct remember *r = reopen(dir);
		char got[128], want[128] = "";
		bool alpha = cut >= ends[0] && cut < ends[2], beta = cut >= ends[1], gamma = cut >= ends[3];
		snprintf(want, sizeof want, "%s%s%s%s%s", alpha ? "alpha" : "", alpha && beta ? " " : "",
			 beta ? "beta" : "", (alpha || beta) && gamma ? " " : "", gamma ? "gamma" : "");
		all_ids(r, 4, got, sizeof got);
		cr_assert_str_eq(got, want, "cut at %zu", cut);
		remember_free(r);
	}
	free(log);
	rm_dir(dir);
}

Test(remember, damaged_logs_keep_what_came_before_the_damage)
{
	char dir[64];
	make_dir(dir, sizeof dir);
	size_t len, ends[4];
	unsigned char *log = reference_log(dir, &len, ends);
	unsigned char *bad = (unsigned char *)sn_dup_exact(log, len);

	/* Each case changes one byte of the second record (+beta), which
	 * starts at ends[0]: op (0), shard (1-4), id length (5-8), id (9-). */
	static const struct {
		const char *what;
		size_t at;
		unsigned char xor_with;
		const char *want;
	} cases[] = {
		{"a bad op byte: only the first record is kept", 0, '?' ^ '+', "alpha"},
		{"an absurd id length", 5, 0x7f, "alpha"},
		{"a wrong shard recorded: the id goes where phash2 puts it", 4, 3, "beta gamma"},
		{"an id that is no term: that record is dropped, the rest read", 9, 0xff ^ ERL_BINARY_EXT, "gamma"},
		{"an id with bytes after its term: dropped, as a peer's would be", 9, ERL_STRING_EXT ^ ERL_BINARY_EXT,
		 "gamma"},
	};
	for (size_t k = 0; k < SN_ARRAY_LEN(cases); k++) {
		memcpy(bad, log, len);
		bad[ends[0] + cases[k].at] ^= cases[k].xor_with;
		write_file(dir, bad, len);
		struct remember *r = reopen(dir);
		char got[128];
		all_ids(r, 4, got, sizeof got);
		cr_assert_str_eq(got, cases[k].want, "%s", cases[k].what);
		remember_free(r);
	}

	/* Not a log at all: the store starts empty and rewrites it. */
	write_file(dir, (const unsigned char *)"hello, world", 12);
	struct remember *r = reopen(dir);
	expect_ids(r, 4, "");
	remember_free(r);

	free(bad);
	free(log);
	rm_dir(dir);
}

Test(remember, a_directory_that_cannot_be_made_is_an_error)
{
	int err = 0;
	struct remember *r = remember_open("/proc/sn_no_such/dir", "t", 4, &quiet, &err);
	cr_assert_null(r);
	cr_assert_lt(err, 0);
}

Test(remember, one_log_one_node)
{
	char dir[64];
	make_dir(dir, sizeof dir);
	int err;
	struct remember *a = remember_open(dir, "counter", 4, &quiet, &err);
	cr_assert_not_null(a);
	struct remember *b = remember_open(dir, "counter", 4, &quiet, &err);
	cr_assert_null(b, "a second opener of the same log is refused");
	cr_assert_eq(err, -EWOULDBLOCK);
	remember_free(a);
	b = remember_open(dir, "counter", 4, &quiet, &err);
	cr_assert_not_null(b, "free again once closed");
	remember_free(b);
	rm_dir(dir);
}

Test(remember, churn_is_compacted_away_while_running)
{
	char dir[64], path[128];
	make_dir(dir, sizeof dir);
	int err;
	struct remember *r = remember_open(dir, "counter", 4, &quiet, &err);
	cr_assert_not_null(r);
	cr_assert_eq(add(r, 4, "stays"), 1);
	/* 2 x 60 000 records of about 20 bytes: well past the 1 MiB floor. */
	for (int k = 0; k < 60000; k++) {
		char id[16];
		snprintf(id, sizeof id, "t%d", k);
		cr_assert_eq(add(r, 4, id), 1);
		cr_assert_eq(del(r, 4, id), 1);
		if (k % 1000 == 0)
			remember_flush(r);
	}
	remember_flush(r);
	snprintf(path, sizeof path, "%s/counter.entities", dir);
	struct stat st;
	cr_assert_eq(stat(path, &st), 0);
	cr_assert_lt(st.st_size, 2 * 1024 * 1024, "compacted at least once: %lld bytes", (long long)st.st_size);
	remember_free(r);
	r = remember_open(dir, "counter", 4, &quiet, &err);
	cr_assert_not_null(r);
	expect_ids(r, 4, "stays");
	remember_free(r);
	rm_dir(dir);
}

/* A record whose id is a term phash2 can hash but a peer's id check would
 * refuse — an atom of ill-formed UTF-8, an integer not in its canonical
 * encoding — is damage too: dropped, the others read. */
Test(remember, ids_that_are_no_canonical_entity_id_are_dropped_on_load)
{
	char dir[64];
	make_dir(dir, sizeof dir);
	static const unsigned char bad_atom[] = {ERL_SMALL_ATOM_UTF8_EXT, 1, 0xFF};
	static const unsigned char long_int[] = {ERL_INTEGER_EXT, 0, 0, 0, 5};
	char good[16];
	size_t good_len = encode_id("ok", good, sizeof good);
	unsigned char log[8 + 3 * 9 + sizeof bad_atom + sizeof long_int + 16];
	memcpy(log, "SNREMEM1", 8); /* the log's header */
	size_t n = 8;
	const unsigned char *ids[] = {bad_atom, long_int, (const unsigned char *)good};
	const size_t lens[] = {sizeof bad_atom, sizeof long_int, good_len};
	for (size_t k = 0; k < 3; k++) {
		log[n] = '+';
		memset(log + n + 1, 0, 4); /* the shard is recomputed on load */
		log[n + 5] = 0;
		log[n + 6] = 0;
		log[n + 7] = 0;
		log[n + 8] = (unsigned char)lens[k];
		memcpy(log + n + 9, ids[k], lens[k]);
		n += 9 + lens[k];
	}
	write_file(dir, log, n);
	struct remember *r = reopen(dir);
	size_t total = 0;
	for (uint32_t s = 0; s < 4; s++)
		total += remember_count(r, s);
	cr_assert_eq(total, 1, "only the canonical binary id is loaded (%zu)", total);
	expect_ids(r, 4, "ok");
	remember_free(r);
	rm_dir(dir);
}
