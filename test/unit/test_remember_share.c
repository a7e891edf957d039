/*
 * test_remember_share.c — the `remembered` message that spreads
 * remembered-entity changes between members: applied to a store, malformed
 * ones refused (what came before the fault stays applied), and every prefix
 * of a message that still validates as a term read without harm.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <ei.h>

#include "etf/entity_id.h"
#include "base/log.h"
#include "etf/phash2.h"
#include "store/remember.h"
#include "sharding/remember_share.h"
#include "etf/term.h"
#include "etf/term_validate.h"
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

/* Applies the term in x, passed as an exact-size copy, then frees x. */
static int apply_x(struct remember *r, ei_x_buff *x, struct lives *l, char *from)
{
	char *t = sn_dup_exact(x->buff, (size_t)x->index);
	const struct remember_msg_hooks hooks = {count_live, NULL, NULL, l};
	int rc = remember_msg_apply(r, t, (size_t)x->index, &hooks, from);
	free(t);
	ei_x_free(x);
	return rc;
}

/* Applies the term written by ei_x_format_wo_ver(fmt). */
static int apply_fmt(struct remember *r, const char *fmt, struct lives *l, char *from)
{
	ei_x_buff x;
	sn_x_new(&x);
	cr_assert_eq(ei_x_format_wo_ver(&x, fmt), 0, "bad test format %s", fmt);
	return apply_x(r, &x, l, from);
}

/* One entry of a message: {Shard, Live, Id}, Id written by ei_x_format
 * from `id_fmt`, Shard = phash2 of its canonical form (or `shard` if not
 * negative: a sender that disagrees). */
struct entry {
	bool live;
	const char *id_fmt;
	long shard;
};

static uint32_t shard_of_fmt(const char *id_fmt)
{
	ei_x_buff id, canon;
	sn_x_new(&id);
	sn_x_new(&canon);
	cr_assert_eq(ei_x_format_wo_ver(&id, id_fmt), 0);
	cr_assert_eq(entity_id_canonical(id.buff, (size_t)id.index, &canon), 0);
	uint32_t s;
	cr_assert_eq(phash2_range(canon.buff, (size_t)canon.index, 8, &s), 0);
	ei_x_free(&id);
	ei_x_free(&canon);
	return s;
}

static int apply_entries(struct remember *r, const struct entry *es, size_t n, struct lives *l, char *from)
{
	ei_x_buff x;
	sn_x_new(&x);
	ei_x_encode_tuple_header(&x, 4);
	ei_x_encode_atom(&x, "$shardnode");
	ei_x_encode_atom(&x, "remembered");
	ei_x_encode_atom(&x, "a@h");
	if (n)
		ei_x_encode_list_header(&x, (long)n);
	for (size_t k = 0; k < n; k++) {
		ei_x_encode_tuple_header(&x, 3);
		ei_x_encode_long(&x, es[k].shard >= 0 ? es[k].shard : (long)shard_of_fmt(es[k].id_fmt));
		ei_x_encode_atom(&x, es[k].live ? "true" : "false");
		ei_x_buff id;
		sn_x_new(&id);
		cr_assert_eq(ei_x_format_wo_ver(&id, es[k].id_fmt), 0);
		term_x_append_raw(&x, id.buff, (size_t)id.index);
		ei_x_free(&id);
	}
	ei_x_encode_empty_list(&x);
	return apply_x(r, &x, l, from);
}

static size_t total(struct remember *r)
{
	size_t n = 0;
	for (uint32_t s = 0; s < 8; s++)
		n += remember_count(r, s);
	return n;
}

Test(remember_share, changes_are_applied_and_started_ones_reported)
{
	struct remember *r = store();
	struct lives l = {0};
	char from[TERM_ATOM_BUF];
	const struct entry add[] = {{true, "1", -1}, {true, "{x, \"y\"}", -1}, {true, "b", -1}};
	cr_assert_eq(apply_entries(r, add, 3, &l, from), 1);
	cr_assert_str_eq(from, "a@h");
	cr_assert_eq(l.n, 3);
	cr_assert_eq(total(r), 3);
	cr_assert_eq(remember_count(r, shard_of_fmt("b")), shard_of_fmt("b") == shard_of_fmt("1") ? 2u : 1u);
	const struct entry del[] = {{false, "1", -1}, {false, "nope", -1}};
	cr_assert_eq(apply_entries(r, del, 2, &l, from), 1);
	cr_assert_eq(l.n, 3, "stops are not reported live");
	cr_assert_eq(total(r), 2);
	cr_assert_eq(apply_entries(r, NULL, 0, &l, from), 1);
	remember_free(r);
}

Test(remember_share, ids_are_made_canonical)
{
	struct remember *r = store();
	struct lives l = {0};
	char from[TERM_ATOM_BUF];
	/* "y" as a string (STRING_EXT) and as the list [121]: one entity. */
	const struct entry es[] = {{true, "{k, \"y\"}", -1}, {true, "{k, [121]}", -1}};
	cr_assert_eq(apply_entries(r, es, 2, &l, from), 1);
	cr_assert_eq(total(r), 1);
	remember_free(r);
}

Test(remember_share, entries_in_the_wrong_shard_are_skipped)
{
	struct remember *r = store();
	struct lives l = {0};
	char from[TERM_ATOM_BUF];
	/* A peer with another number_of_shards: its shards are not ours. */
	const struct entry es[] = {{true, "a", (shard_of_fmt("a") + 1) % 8}, {true, "a", 99}, {true, "c", -1}};
	cr_assert_eq(apply_entries(r, es, 3, &l, from), 1);
	cr_assert_eq(total(r), 1);
	cr_assert_eq(l.n, 1, "only what was stored is started");
	remember_free(r);
}

Test(remember_share, other_terms_are_not_ours)
{
	struct remember *r = store();
	struct lives l = {0};
	char from[TERM_ATOM_BUF];
	cr_assert_eq(apply_fmt(r, "{'$shardnode', gossip, n, []}", &l, from), 0);
	cr_assert_eq(apply_fmt(r, "{'$shardnode', remembered, n}", &l, from), 0);
	cr_assert_eq(apply_fmt(r, "{other, remembered, n, []}", &l, from), 0);
	cr_assert_eq(apply_fmt(r, "hello", &l, from), 0);
	remember_free(r);
}

Test(remember_share, malformed_messages_stop_at_the_fault)
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
	ei_x_encode_long(&x, (long)shard_of_fmt("good"));
	ei_x_encode_atom(&x, "true");
	ei_x_encode_atom(&x, "good");
	ei_x_encode_tuple_header(&x, 3);
	ei_x_encode_long(&x, 2);
	ei_x_encode_atom(&x, "true");
	ei_x_encode_pid(&x, &pid);
	ei_x_encode_empty_list(&x);
	char *t = sn_dup_exact(x.buff, (size_t)x.index);
	cr_assert_eq(remember_msg_apply(r, t, (size_t)x.index, NULL, from), -EPROTO);
	cr_assert_eq(remember_count(r, shard_of_fmt("good")), 1, "the entry before the fault is applied");
	free(t);
	ei_x_free(&x);
	remember_free(r);
}

Test(remember_share, every_prefix_that_is_a_term_is_read_safely)
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
			int rc = remember_msg_apply(r, t, end, NULL, from);
			cr_assert(rc == 1 || rc == 0 || rc == -EPROTO, "cut at %zu: %d", cut, rc);
			remember_free(r);
		}
		free(t);
	}
	ei_x_free(&x);
}

static bool hosts_shard_of_b(void *arg, uint32_t shard)
{
	(void)arg;
	return shard == shard_of_fmt("b");
}

Test(remember_share, stops_reported_for_a_shard_hosted_here_are_ignored)
{
	struct remember *r = store();
	struct lives l = {0};
	char from[TERM_ATOM_BUF];
	const struct entry add[] = {{true, "b", -1}};
	cr_assert_eq(apply_entries(r, add, 1, &l, from), 1);
	cr_assert_eq(total(r), 1);
	/* A late stop from the shard's previous home: this region hosts it now. */
	ei_x_buff x;
	sn_x_new(&x);
	cr_assert_eq(ei_x_format_wo_ver(&x, "{'$shardnode', remembered, n, [{~i, false, b}]}", (int)shard_of_fmt("b")), 0);
	char *t = sn_dup_exact(x.buff, (size_t)x.index);
	struct lives kept = {0};
	const struct remember_msg_hooks hooks = {NULL, hosts_shard_of_b, count_live, &kept};
	cr_assert_eq(remember_msg_apply(r, t, (size_t)x.index, &hooks, from), 1);
	cr_assert_eq(total(r), 1, "the home alone says its entities stopped");
	cr_assert_eq(kept.n, 1, "and the region hears of it, to tell the others it lives");
	cr_assert_eq(remember_msg_apply(r, t, (size_t)x.index, NULL, from), 1);
	cr_assert_eq(total(r), 0, "for a shard hosted elsewhere, the stop applies");
	free(t);
	ei_x_free(&x);
	remember_free(r);
}
