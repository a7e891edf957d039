/*
 * test_shard_state.c — a shard's entity states moved as chunks of
 * [{Id, State}]: every entity once, in chunks of bounded size, restored
 * whole on the other side; what a chunk must be; types without state.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <ei.h>

#include "entity/entity_builtin.h"
#include "entity/entity_kv.h"
#include "etf/entity_id.h"
#include "etf/term.h"
#include "etf/term_validate.h"
#include "entity/shard.h"
#include "entity/shard_state.h"
#include "unit_helpers.h"

static const struct entity_type *builtin(const char *name)
{
	for (const struct entity_type *const *t = entity_builtin_types(); *t; t++)
		if (strcmp((*t)->name, name) == 0)
			return *t;
	cr_assert_fail("no built-in %s", name);
	return NULL;
}

/* The canonical id of the integer k, into id. */
static void int_id(ei_x_buff *id, long k)
{
	ei_x_buff raw;
	sn_x_new(&raw);
	ei_x_encode_long(&raw, k);
	id->index = 0;
	cr_assert_eq(entity_id_canonical(raw.buff, (size_t)raw.index, id), 0);
	ei_x_free(&raw);
}

/* Sends the term `fmt` (with `arg` for a ~l in it) to entity k; returns
 * the integer reply. */
static long long deliver_int(struct shard *s, long k, const char *fmt, long arg)
{
	ei_x_buff id, msg, reply;
	sn_x_new(&id);
	sn_x_new(&msg);
	sn_x_new(&reply);
	int_id(&id, k);
	cr_assert_eq(ei_x_format_wo_ver(&msg, fmt, arg), 0);
	cr_assert_eq(shard_deliver(s, id.buff, (size_t)id.index, msg.buff, (size_t)msg.index, false, 0, &reply, NULL), 0);
	int i = 0;
	long long v = 0;
	cr_assert_eq(ei_decode_longlong(reply.buff, &i, &v), 0);
	ei_x_free(&id);
	ei_x_free(&msg);
	ei_x_free(&reply);
	return v;
}

/* Moves every state of `from` into `to` in chunks of about max_bytes,
 * each checked as a term a peer could send. Returns the chunks used. */
static size_t move_all(const struct shard *from, struct shard *to, size_t max_bytes, size_t *moved)
{
	struct shard_state_cursor cur = {0};
	size_t chunks = 0, total = 0;
	int more;
	do {
		ei_x_buff x;
		sn_x_new(&x);
		size_t n, restored;
		more = shard_state_export(from, &cur, max_bytes, &x, &n);
		cr_assert_geq(more, 0);
		char *exact = sn_dup_exact(x.buff, (size_t)x.index);
		size_t end = 0;
		cr_assert_eq(term_validate(exact, (size_t)x.index, &end), 0, "a chunk is a term");
		cr_assert_eq(end, (size_t)x.index);
		cr_assert_eq(shard_state_import(to, exact, (size_t)x.index, 0, &restored), 0);
		cr_assert_eq(restored, n);
		if (more && n > 1)
			cr_assert_lt((size_t)x.index - 0, max_bytes + 64, "bounded: at most one entity past the limit");
		total += n;
		chunks++;
		free(exact);
		ei_x_free(&x);
	} while (more);
	*moved = total;
	return chunks;
}

Test(shard_state, counters_move_whole_in_bounded_chunks)
{
	const struct entity_type *t = builtin("counter");
	struct shard *a = shard_new(3, t), *b = shard_new(3, t);
	for (long k = 0; k < 1000; k++)
		cr_assert_eq(deliver_int(a, k, "{incr, ~l}", k * 7 - 300), k * 7 - 300);
	size_t moved;
	size_t chunks = move_all(a, b, 256, &moved);
	cr_assert_eq(moved, 1000);
	cr_assert_gt(chunks, 10, "many small chunks, not one");
	cr_assert_eq(b->entities.count, 1000);
	for (long k = 0; k < 1000; k++)
		cr_assert_eq(deliver_int(b, k, "get", 0), k * 7 - 300, "entity %ld continues", k);
	shard_free(a);
	shard_free(b);
}

Test(shard_state, one_byte_chunks_carry_one_entity_each)
{
	const struct entity_type *t = builtin("counter");
	struct shard *a = shard_new(0, t), *b = shard_new(0, t);
	for (long k = 0; k < 5; k++)
		deliver_int(a, k, "incr", 0);
	size_t moved;
	cr_assert_eq(move_all(a, b, 1, &moved), 5, "never an empty chunk while entities remain");
	cr_assert_eq(moved, 5);
	shard_free(a);
	shard_free(b);
}

Test(shard_state, an_empty_shard_is_one_empty_chunk)
{
	struct shard *a = shard_new(0, builtin("counter"));
	struct shard_state_cursor cur = {0};
	ei_x_buff x;
	sn_x_new(&x);
	size_t n;
	cr_assert_eq(shard_state_export(a, &cur, 1000, &x, &n), 0);
	cr_assert_eq(n, 0);
	cr_assert_eq(x.index, 1);
	cr_assert_eq((unsigned char)x.buff[0], ERL_NIL_EXT, "[]");
	ei_x_free(&x);
	shard_free(a);
}

Test(shard_state, a_type_without_state_exports_nothing_and_imports_nothing)
{
	const struct entity_type *t = builtin("echo");
	struct shard *a = shard_new(0, t);
	ei_x_buff id, msg, reply;
	sn_x_new(&id);
	sn_x_new(&msg);
	sn_x_new(&reply);
	int_id(&id, 1);
	ei_x_encode_atom(&msg, "hi");
	cr_assert_eq(shard_deliver(a, id.buff, (size_t)id.index, msg.buff, (size_t)msg.index, false, 0, &reply, NULL), 0);
	struct shard_state_cursor cur = {0};
	ei_x_buff x;
	sn_x_new(&x);
	size_t n, restored;
	cr_assert_eq(shard_state_export(a, &cur, 1000, &x, &n), 0);
	cr_assert_eq(n, 0, "echo keeps no state: it starts afresh elsewhere");
	cr_assert_eq(shard_state_import(a, x.buff, (size_t)x.index, 0, &restored), -EINVAL);
	ei_x_free(&x);
	ei_x_free(&id);
	ei_x_free(&msg);
	ei_x_free(&reply);
	shard_free(a);
}

static int import_fmt(struct shard *s, const char *fmt, size_t *restored)
{
	ei_x_buff x;
	sn_x_new(&x);
	cr_assert_eq(ei_x_format_wo_ver(&x, fmt), 0, "%s", fmt);
	char *exact = sn_dup_exact(x.buff, (size_t)x.index);
	int rc = shard_state_import(s, exact, (size_t)x.index, 0, restored);
	free(exact);
	ei_x_free(&x);
	return rc;
}

Test(shard_state, bad_chunks_are_refused_and_leave_no_half_entity)
{
	struct shard *s = shard_new(0, builtin("counter"));
	size_t r;
	cr_assert_eq(import_fmt(s, "{1, 2}", &r), -EPROTO, "not a list");
	cr_assert_eq(import_fmt(s, "[{1, 2, 3}]", &r), -EPROTO, "not pairs");
	cr_assert_eq(import_fmt(s, "[5]", &r), -EPROTO, "not a tuple");
	cr_assert_eq(import_fmt(s, "[{1, 10}, {2, notanumber}, {3, 30}]", &r), -EPROTO);
	cr_assert_eq(r, 1, "the entity before the fault is restored");
	cr_assert_eq(s->entities.count, 1, "the one at fault is not left behind, the rest not read");
	cr_assert_eq(deliver_int(s, 1, "get", 0), 10);
	cr_assert_eq(import_fmt(s, "[{1, 99}, {4, 40}]", &r), 0);
	cr_assert_eq(r, 1, "a live entity is left as it is");
	cr_assert_eq(deliver_int(s, 1, "get", 0), 10);
	cr_assert_eq(deliver_int(s, 4, "get", 0), 40);
	cr_assert_eq(import_fmt(s, "[]", &r), 0);
	cr_assert_eq(r, 0);
	shard_free(s);
}

static int started;
static void count_started(void *arg, uint32_t shard, const char *id, size_t len)
{
	(void)arg;
	(void)shard;
	(void)id;
	(void)len;
	started++;
}

Test(shard_state, kv_maps_move_and_the_observer_hears_of_each)
{
	const struct entity_type *t = &entity_kv_type;
	struct shard *a = shard_new(1, t), *b = shard_new(1, t);
	ei_x_buff id, msg, reply;
	sn_x_new(&id);
	sn_x_new(&msg);
	for (long k = 0; k < 50; k++) {
		int_id(&id, k);
		msg.index = 0;
		ei_x_format_wo_ver(&msg, "{put, key, ~l}", k);
		sn_x_new(&reply);
		cr_assert_eq(shard_deliver(a, id.buff, (size_t)id.index, msg.buff, (size_t)msg.index, false, 0, &reply, NULL), 0);
		ei_x_free(&reply);
	}
	started = 0;
	b->observer.started = count_started;
	size_t moved;
	move_all(a, b, 300, &moved);
	cr_assert_eq(moved, 50);
	cr_assert_eq(started, 50, "each restored entity is a start on the new home");
	int_id(&id, 42);
	msg.index = 0;
	ei_x_format_wo_ver(&msg, "{get, key}");
	sn_x_new(&reply);
	cr_assert_eq(shard_deliver(b, id.buff, (size_t)id.index, msg.buff, (size_t)msg.index, false, 0, &reply, NULL), 0);
	char *text = NULL;
	int i = 0;
	cr_assert_geq(ei_s_print_term(&text, reply.buff, &i), 0);
	cr_assert_str_eq(text, "{ok, 42}");
	free(text);
	ei_x_free(&reply);
	ei_x_free(&id);
	ei_x_free(&msg);
	shard_free(a);
	shard_free(b);
}
