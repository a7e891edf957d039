/*
 * test_remember.c — the remembered-entity store: sets per shard, and the log
 * that carries them across a restart, read back whole and cut at every byte.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "log.h"
#include "remember.h"
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

static int add(struct remember *r, uint32_t shard, const char *id)
{
	char *copy = sn_dup_exact(id, strlen(id));
	int rc = remember_add(r, shard, copy, strlen(id));
	free(copy);
	return rc;
}

static int del(struct remember *r, uint32_t shard, const char *id)
{
	return remember_remove(r, shard, id, strlen(id));
}

struct collected {
	char ids[16][32];
	size_t n;
};

static void collect(void *arg, const char *id, size_t len)
{
	struct collected *c = arg;
	cr_assert(c->n < 16 && len < 32);
	memcpy(c->ids[c->n], id, len);
	c->ids[c->n++][len] = '\0';
}

static int cmp(const void *a, const void *b) { return strcmp(a, b); }

/* The ids of a shard, sorted and joined with spaces. */
static void ids_of(const struct remember *r, uint32_t shard, char *out, size_t cap)
{
	struct collected c = {.n = 0};
	remember_each(r, shard, collect, &c);
	qsort(c.ids, c.n, sizeof c.ids[0], cmp);
	out[0] = '\0';
	for (size_t k = 0; k < c.n; k++) {
		strncat(out, k ? " " : "", cap - strlen(out) - 1);
		strncat(out, c.ids[k], cap - strlen(out) - 1);
	}
	cr_assert_eq(remember_count(r, shard), c.n);
}

static void expect_ids(const struct remember *r, uint32_t shard, const char *want)
{
	char got[512];
	ids_of(r, shard, got, sizeof got);
	cr_assert_str_eq(got, want, "shard %u", shard);
}

Test(remember, sets_per_shard_in_memory)
{
	int err;
	struct remember *r = remember_open(NULL, "counter", 4, &quiet, &err);
	cr_assert_not_null(r);
	cr_assert_eq(add(r, 0, "a"), 1);
	cr_assert_eq(add(r, 0, "a"), 0, "already there");
	cr_assert_eq(add(r, 0, "b"), 1);
	cr_assert_eq(add(r, 3, "a"), 1, "the same id in another shard is another entry");
	cr_assert_eq(del(r, 0, "a"), 1);
	cr_assert_eq(del(r, 0, "a"), 0);
	cr_assert_eq(del(r, 1, "zz"), 0);
	cr_assert_eq(add(r, 4, "x"), -EINVAL);
	cr_assert_eq(del(r, 4, "x"), -EINVAL);
	expect_ids(r, 0, "b");
	expect_ids(r, 1, "");
	expect_ids(r, 3, "a");
	cr_assert_eq(remember_count(r, 99), 0);
	remember_flush(r); /* nothing to write: fine */
	remember_close(r);
	remember_close(NULL);
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
		cr_assert_eq(add(r, (uint32_t)k % 3, id), 1);
	}
	cr_assert_eq(del(r, 0, "e3"), 1);
	cr_assert_eq(del(r, 1, "e1"), 1);
	remember_close(r);

	r = remember_open(sub, "counter", 8, &quiet, &err);
	cr_assert_not_null(r);
	expect_ids(r, 0, "e0 e6 e9");
	expect_ids(r, 1, "e4 e7");
	expect_ids(r, 2, "e2 e5 e8");
	remember_close(r);

	/* Compacted: a header and 8 add records of 2-byte ids, nothing else. */
	snprintf(path, sizeof path, "%s/counter.entities", sub);
	struct stat st;
	cr_assert_eq(stat(path, &st), 0);
	cr_assert_eq(st.st_size, 8 + 8 * (9 + 2));
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
	cr_assert_eq(add(a, 1, "x"), 1);
	cr_assert_eq(add(b, 0, "y"), 1);
	remember_close(a);
	remember_close(b);
	a = remember_open(dir, "counter", 2, &quiet, &err);
	b = remember_open(dir, "kv", 2, &quiet, &err);
	expect_ids(a, 1, "x");
	expect_ids(a, 0, "");
	expect_ids(b, 0, "y");
	remember_close(a);
	remember_close(b);
	rm_dir(dir);
}

/* Writes the log of a store with a known history, then returns its bytes. */
static unsigned char *reference_log(const char *dir, size_t *len)
{
	int err;
	struct remember *r = remember_open(dir, "t", 4, &quiet, &err);
	cr_assert_not_null(r);
	cr_assert_eq(add(r, 0, "alpha"), 1);
	cr_assert_eq(add(r, 1, "beta"), 1);
	cr_assert_eq(del(r, 0, "alpha"), 1);
	cr_assert_eq(add(r, 3, "gamma"), 1);
	remember_close(r); /* no reopen: the log keeps its history */
	char path[128];
	snprintf(path, sizeof path, "%s/t.entities", dir);
	FILE *f = fopen(path, "rb");
	cr_assert_not_null(f);
	unsigned char *buf = malloc(4096);
	*len = fread(buf, 1, 4096, f);
	fclose(f);
	cr_assert_eq(*len, 8 + 4 * 9 + 5 + 4 + 5 + 5);
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

Test(remember, a_log_cut_at_every_byte_loads_the_whole_records_before_the_cut)
{
	char dir[64];
	make_dir(dir, sizeof dir);
	size_t len;
	unsigned char *log = reference_log(dir, &len);
	/* Record ends: header 8, +alpha 22, +beta 35, -alpha 49, +gamma 63. */
	for (size_t cut = 0; cut <= len; cut++) {
		write_file(dir, log, cut);
		int err;
		struct remember *r = remember_open(dir, "t", 4, &quiet, &err);
		cr_assert_not_null(r, "cut at %zu", cut);
		char s0[64], s1[64], s3[64];
		ids_of(r, 0, s0, sizeof s0);
		ids_of(r, 1, s1, sizeof s1);
		ids_of(r, 3, s3, sizeof s3);
		cr_assert_str_eq(s0, cut >= 22 && cut < 49 ? "alpha" : "", "cut at %zu", cut);
		cr_assert_str_eq(s1, cut >= 35 ? "beta" : "", "cut at %zu", cut);
		cr_assert_str_eq(s3, cut >= 63 ? "gamma" : "", "cut at %zu", cut);
		remember_close(r);
	}
	free(log);
	rm_dir(dir);
}

Test(remember, damaged_logs_keep_what_came_before_the_damage)
{
	char dir[64];
	make_dir(dir, sizeof dir);
	size_t len;
	unsigned char *log = reference_log(dir, &len);
	int err;

	/* A bad op byte in the second record: only the first is kept. */
	unsigned char *bad = (unsigned char *)sn_dup_exact(log, len);
	bad[22] = '?';
	write_file(dir, bad, len);
	struct remember *r = remember_open(dir, "t", 4, &quiet, &err);
	cr_assert_not_null(r);
	expect_ids(r, 0, "alpha");
	expect_ids(r, 1, "");
	remember_close(r);

	/* An absurd id length. */
	memcpy(bad, log, len);
	bad[22 + 5] = 0x7f;
	write_file(dir, bad, len);
	r = remember_open(dir, "t", 4, &quiet, &err);
	cr_assert_not_null(r);
	expect_ids(r, 0, "alpha");
	remember_close(r);

	/* A shard beyond number_of_shards (the setting changed): skipped. */
	memcpy(bad, log, len);
	bad[22 + 4] = 9;
	write_file(dir, bad, len);
	r = remember_open(dir, "t", 4, &quiet, &err);
	cr_assert_not_null(r);
	expect_ids(r, 1, "");
	expect_ids(r, 3, "gamma");
	remember_close(r);

	/* Not a log at all: the store starts empty and rewrites it. */
	write_file(dir, (const unsigned char *)"hello, world", 12);
	r = remember_open(dir, "t", 4, &quiet, &err);
	cr_assert_not_null(r);
	for (uint32_t s = 0; s < 4; s++)
		cr_assert_eq(remember_count(r, s), 0);
	remember_close(r);

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
