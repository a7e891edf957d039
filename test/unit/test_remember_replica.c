/*
 * test_remember_replica.c — the `remembered` message that spreads
 * remembered-entity changes between members: applied to a store, malformed
 * ones refused (what came before the fault stays applied), and every prefix
 * of a message that still validates as a term read without harm.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <ei.h>

#include "log.h"
#include "remember.h"
#include "remember_replica.h"
#include "term.h"
#include "unit_helpers.h"

static const struct logger quiet = {.min_level = LOG_ERROR, .out = NULL};

static struct remember *store(void)
{
	int err;
	struct remember *r = remember_open(NULL, "counter", 8, &quiet, &err);
	cr_assert_not_null(r);
	return r;
}

struct lives {
	int n;
	uint32_t last_shard;
};

static void count_live(void *arg, uint32_t shard, const char *id, size_t len)
{
	(void)id;
	(void)len;
	struct lives *l = arg;
	l->n++;
	l->last_shard = shard;
}

/* Applies the term written by ei_x_format_wo_ver(fmt), passed as an
 * exact-size copy. */
static int apply_fmt(struct remember *r, const char *fmt, struct lives *l, char *from)
{
	ei_x_buff x;
	sn_x_new(&x);
	cr_assert_eq(ei_x_format_wo_ver(&x, fmt), 0, "bad test format %s", fmt);
	char *t = sn_dup_exact(x.buff, (size_t)x.index);
	int rc = remember_msg_apply(r, t, (size_t)x.index, count_live, l, from);
	free(t);
	ei_x_free(&x);
	return rc;
}

static size_t count_of(struct remember *r, uint32_t shard) { return remember_count(r, shard); }

Test(remember_replica, changes_are_applied_and_started_ones_reported)
{
	struct remember *r = store();
	struct lives l = {0};
	char from[TERM_ATOM_BUF];
	cr_assert_eq(apply_fmt(r, "{'$shardnode', remembered, 'a@h', [{3, true, 1}, {3, true, {x, \"y\"}}, {5, true, b}]}",
			       &l, from), 1);
	cr_assert_str_eq(from, "a@h");
	cr_assert_eq(l.n, 3);
	cr_assert_eq(count_of(r, 3), 2);
	cr_assert_eq(count_of(r, 5), 1);
	cr_assert_eq(apply_fmt(r, "{'$shardnode', remembered, 'a@h', [{3, false, 1}, {5, false, nope}]}", &l, from), 1);
	cr_assert_eq(l.n, 3, "stops are not reported live");
	cr_assert_eq(count_of(r, 3), 1);
	cr_assert_eq(count_of(r, 5), 1);
	cr_assert_eq(apply_fmt(r, "{'$shardnode', remembered, 'a@h', []}", &l, from), 1);
	remember_close(r);
}

Test(remember_replica, ids_are_made_canonical)
{
	struct remember *r = store();
	struct lives l = {0};
	char from[TERM_ATOM_BUF];
	/* "y" as a string (STRING_EXT) and as the list [121]: one entity. */
	cr_assert_eq(apply_fmt(r, "{'$shardnode', remembered, n, [{1, true, {k, \"y\"}}, {1, true, {k, [121]}}]}", &l,
			       from), 1);
	cr_assert_eq(count_of(r, 1), 1);
	remember_close(r);
}

Test(remember_replica, other_terms_are_not_ours)
{
	struct remember *r = store();
	struct lives l = {0};
	char from[TERM_ATOM_BUF];
	cr_assert_eq(apply_fmt(r, "{'$shardnode', gossip, n, []}", &l, from), 0);
	cr_assert_eq(apply_fmt(r, "{'$shardnode', remembered, n}", &l, from), 0);
	cr_assert_eq(apply_fmt(r, "{other, remembered, n, []}", &l, from), 0);
	cr_assert_eq(apply_fmt(r, "hello", &l, from), 0);
	remember_close(r);
}

Test(remember_replica, malformed_messages_stop_at_the_fault)
{
	struct remember *r = store();
	struct lives l = {0};
	char from[TERM_ATOM_BUF];
	static const char *const bad[] = {
		"{'$shardnode', remembered, \"n\", []}",
		"{'$shardnode', remembered, n, notalist}",
		"{'$shardnode', remembered, n, [{1, true}]}",
		"{'$shardnode', remembered, n, [{-1, true, a}]}",
		"{'$shardnode', remembered, n, [{x, true, a}]}",
		"{'$shardnode', remembered, n, [{1, maybe, a}]}",
		"{'$shardnode', remembered, n, [{1, true, a} | tail]}",
	};
	for (size_t k = 0; k < SN_ARRAY_LEN(bad); k++)
		cr_assert_eq(apply_fmt(r, bad[k], &l, from), -EPROTO, "%s", bad[k]);
	/* A pid is no entity id: refused, after the good entry before it. */
	ei_x_buff x;
	sn_x_new(&x);
	erlang_pid pid = sn_pid("n@h", 1, 0);
	ei_x_encode_tuple_header(&x, 4);
	ei_x_encode_atom(&x, "$shardnode");
	ei_x_encode_atom(&x, "remembered");
	ei_x_encode_atom(&x, "n@h");
	ei_x_encode_list_header(&x, 2);
	ei_x_encode_tuple_header(&x, 3);
	ei_x_encode_long(&x, 2);
	ei_x_encode_atom(&x, "true");
	ei_x_encode_atom(&x, "good");
	ei_x_encode_tuple_header(&x, 3);
	ei_x_encode_long(&x, 2);
	ei_x_encode_atom(&x, "true");
	ei_x_encode_pid(&x, &pid);
	ei_x_encode_empty_list(&x);
	char *t = sn_dup_exact(x.buff, (size_t)x.index);
	cr_assert_eq(remember_msg_apply(r, t, (size_t)x.index, NULL, NULL, from), -EPROTO);
	cr_assert_eq(count_of(r, 2), 1);
	free(t);
	ei_x_free(&x);
	/* A shard beyond number_of_shards is skipped, not fatal. */
	cr_assert_eq(apply_fmt(r, "{'$shardnode', remembered, n, [{99, true, a}, {4, true, a}]}", &l, from), 1);
	cr_assert_eq(count_of(r, 4), 1);
	remember_close(r);
}

Test(remember_replica, every_prefix_that_is_a_term_is_read_safely)
{
	ei_x_buff x;
	sn_x_new(&x);
	cr_assert_eq(ei_x_format_wo_ver(&x, "{'$shardnode', remembered, 'a@h', [{3, true, {x, \"yz\", 1.5}}, {4, false, [a, \"b\"]}]}"), 0);
	for (size_t cut = 0; cut <= (size_t)x.index; cut++) {
		char *t = sn_dup_exact(x.buff, cut);
		size_t end = 0;
		if (term_validate(t, cut, &end) == 0) {
			struct remember *r = store();
			char from[TERM_ATOM_BUF];
			int rc = remember_msg_apply(r, t, end, NULL, NULL, from);
			cr_assert(rc == 1 || rc == 0 || rc == -EPROTO, "cut at %zu: %d", cut, rc);
			remember_close(r);
		}
		free(t);
	}
	ei_x_free(&x);
}
