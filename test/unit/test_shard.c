/*
 * test_shard.c — a shard's entity lifecycle (start on first message,
 * passivate on request, on ENTITY_STOP and when idle, stop everything on
 * free) and the built-in types counter, kv and echo as seen through
 * shard_deliver.
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <ei.h>

#include "entity/entity_builtin.h"
#include "entity/shard.h"
#include "etf/term.h"
#include "etf/term_validate.h"
#include "unit_helpers.h"

/* ---- helpers ---- */

static const struct entity_type *builtin(const char *name)
{
	for (const struct entity_type *const *t = entity_builtin_types(); *t; t++)
		if (strcmp((*t)->name, name) == 0)
			return *t;
	cr_assert_fail("no built-in type %s", name);
	return NULL;
}

/* Entity ids are canonical terms; a binary <<Text>> is one. */
struct id {
	ei_x_buff x;
};

static struct id mkid(const char *text)
{
	struct id id;
	sn_x_new(&id.x);
	cr_assert_eq(ei_x_encode_binary(&id.x, text, (int)strlen(text)), 0);
	return id;
}

/* Delivers the term in msg (no version byte) to entity `id` and returns the
 * reply, checked to be exactly one well-formed term. Both the id and the
 * message are passed as exact-size heap copies. */
static ei_x_buff deliver_at(struct shard *s, const struct id *id, const ei_x_buff *msg, uint32_t now)
{
	size_t end = 0;
	cr_assert_eq(term_validate(msg->buff, (size_t)msg->index, &end), 0, "test message must be a term");
	cr_assert_eq(end, (size_t)msg->index);
	char *idc = sn_dup_exact(id->x.buff, (size_t)id->x.index);
	char *mc = sn_dup_exact(msg->buff, (size_t)msg->index);
	ei_x_buff reply;
	sn_x_new(&reply);
	/* The region's one look at the head: only the bare atom passivates. */
	bool passivate = term_is_atom(mc, 0, "passivate");
	cr_assert_eq(shard_deliver(s, idc, (size_t)id->x.index, mc, (size_t)msg->index, passivate, now, &reply, NULL), 0);
	free(idc);
	free(mc);
	end = 0;
	cr_assert_eq(term_validate(reply.buff, (size_t)reply.index, &end), 0, "reply is a term");
	cr_assert_eq(end, (size_t)reply.index, "reply is exactly one term");
	return reply;
}

/* Formats msgfmt (ei_x_format syntax) and delivers it. */
static ei_x_buff deliver_fmt(struct shard *s, const char *id_text, uint32_t now, const char *msgfmt)
{
	struct id id = mkid(id_text);
	ei_x_buff msg;
	sn_x_new(&msg);
	cr_assert_eq(ei_x_format_wo_ver(&msg, msgfmt), 0, "format %s", msgfmt);
	ei_x_buff reply = deliver_at(s, &id, &msg, now);
	ei_x_free(&msg);
	ei_x_free(&id.x);
	return reply;
}

/* The reply as Erlang text, e.g. "{error, not_found}". */
static void assert_reply(ei_x_buff *reply, const char *want)
{
	char *text = NULL;
	int i = 0;
	cr_assert_geq(ei_s_print_term(&text, reply->buff, &i), 0);
	cr_assert_str_eq(text, want);
	free(text);
	ei_x_free(reply);
}

static void expect(struct shard *s, const char *id, const char *msgfmt, const char *want)
{
	ei_x_buff r = deliver_fmt(s, id, 0, msgfmt);
	assert_reply(&r, want);
}

static long long reply_int(ei_x_buff *reply)
{
	int i = 0;
	long long v;
	cr_assert_eq(ei_decode_longlong(reply->buff, &i, &v), 0, "reply is an integer");
	cr_assert_eq(i, reply->index);
	ei_x_free(reply);
	return v;
}

static long long counter_at(struct shard *s, const char *id, uint32_t now, const char *msgfmt)
{
	ei_x_buff r = deliver_fmt(s, id, now, msgfmt);
	return reply_int(&r);
}

static long long counter(struct shard *s, const char *id, const char *msgfmt)
{
	return counter_at(s, id, 0, msgfmt);
}

/* Checks reply is {error, {unknown_message, Msg}} with Msg's bytes echoed. */
static void assert_unknown(ei_x_buff *reply, const ei_x_buff *msg)
{
	int i = 0, arity;
	char atom[MAXATOMLEN_UTF8];
	cr_assert_eq(ei_decode_tuple_header(reply->buff, &i, &arity), 0);
	cr_assert_eq(arity, 2);
	cr_assert_eq(ei_decode_atom(reply->buff, &i, atom), 0);
	cr_assert_str_eq(atom, "error");
	cr_assert_eq(ei_decode_tuple_header(reply->buff, &i, &arity), 0);
	cr_assert_eq(arity, 2);
	cr_assert_eq(ei_decode_atom(reply->buff, &i, atom), 0);
	cr_assert_str_eq(atom, "unknown_message");
	cr_assert_eq(reply->index - i, msg->index, "the message is echoed whole");
	cr_assert_eq(memcmp(reply->buff + i, msg->buff, (size_t)msg->index), 0, "byte for byte");
	ei_x_free(reply);
}

static void expect_unknown(struct shard *s, const char *id, const ei_x_buff *msg)
{
	struct id eid = mkid(id);
	ei_x_buff r = deliver_at(s, &eid, msg, 0);
	assert_unknown(&r, msg);
	ei_x_free(&eid.x);
}

static void expect_unknown_fmt(struct shard *s, const char *id, const char *msgfmt)
{
	ei_x_buff msg;
	sn_x_new(&msg);
	cr_assert_eq(ei_x_format_wo_ver(&msg, msgfmt), 0, "format %s", msgfmt);
	expect_unknown(s, id, &msg);
	ei_x_free(&msg);
}

static struct shard *new_shard(const struct entity_type *t)
{
	struct shard *s = shard_new(7, t);
	cr_assert_not_null(s);
	cr_assert_eq(s->id, 7);
	cr_assert_eq(s->type, t);
	cr_assert_eq(s->entities.count, 0);
	return s;
}

/* ---- counter ---- */

Test(shard, builtin_types_are_listed)
{
	const struct entity_type *const *t = entity_builtin_types();
	size_t n = 0;
	for (; t[n]; n++) {
		cr_assert_eq(t[n]->api_version, ENTITY_API_VERSION);
		cr_assert_not_null(t[n]->handle);
	}
	cr_assert_eq(n, 3);
	cr_assert_str_eq(builtin("counter")->name, "counter");
	cr_assert_str_eq(builtin("kv")->name, "kv");
	cr_assert_eq(builtin("echo")->state_size, 0);
}

Test(shard, counter_messages)
{
	struct shard *s = new_shard(builtin("counter"));
	cr_assert_eq(counter(s, "a", "get"), 0, "a new counter reads 0");
	cr_assert_eq(counter(s, "a", "incr"), 1);
	cr_assert_eq(counter(s, "a", "incr"), 2);
	cr_assert_eq(counter(s, "a", "decr"), 1);
	cr_assert_eq(counter(s, "a", "{incr, 10}"), 11);
	cr_assert_eq(counter(s, "a", "{incr, -20}"), -9);
	cr_assert_eq(counter(s, "a", "{incr, 0}"), -9);
	cr_assert_eq(counter(s, "a", "get"), -9);
	cr_assert_eq(counter(s, "b", "incr"), 1, "entities are independent");
	cr_assert_eq(counter(s, "a", "get"), -9);
	cr_assert_eq(s->entities.count, 2);
	cr_assert_eq(s->started, 2);
	cr_assert_eq(s->passivated, 0);
	shard_free(s);
}

/* The reply `r` is exactly the bytes of `want` (consumed). */
static void assert_reply_bytes(ei_x_buff *r, const unsigned char *want, size_t n)
{
	cr_assert_eq((size_t)r->index, n);
	cr_assert_eq(memcmp(r->buff, want, n), 0);
	ei_x_free(r);
}

Test(shard, counter_never_wraps)
{
	struct shard *s = new_shard(builtin("counter"));
	ei_x_buff msg;
	struct id id = mkid("w");

	/* {incr, LLONG_MAX} is a bignum on the wire. */
	sn_x_new(&msg);
	cr_assert_eq(ei_x_encode_tuple_header(&msg, 2), 0);
	cr_assert_eq(ei_x_encode_atom(&msg, "incr"), 0);
	cr_assert_eq(ei_x_encode_longlong(&msg, LLONG_MAX), 0);
	ei_x_buff r = deliver_at(s, &id, &msg, 0);
	cr_assert_eq(reply_int(&r), LLONG_MAX);
	ei_x_free(&msg);

	/* One more is 2^63, as on a BEAM, and back. */
	static const unsigned char two_63[] = {ERL_SMALL_BIG_EXT, 8, 0, 0, 0, 0, 0, 0, 0, 0, 0x80};
	r = deliver_fmt(s, "w", 0, "incr");
	assert_reply_bytes(&r, two_63, sizeof two_63);
	cr_assert_eq(counter(s, "w", "decr"), LLONG_MAX);

	/* An increment beyond 64 bits is an increment: 1 + 2^64. */
	static const unsigned char big[] = {ERL_SMALL_TUPLE_EXT, 2,   ERL_SMALL_ATOM_UTF8_EXT, 4, 'i', 'n', 'c', 'r',
					    ERL_SMALL_BIG_EXT,   9,   0, 1, 0, 0, 0, 0, 0, 0, 0, 1};
	sn_x_new(&msg);
	cr_assert_eq(ei_x_append_buf(&msg, (const char *)big, (int)sizeof big), 0);
	r = deliver_at(s, &id, &msg, 0);
	ei_x_free(&msg);
	/* LLONG_MAX + 1 + 2^64 = 2^63 + 2^64 */
	static const unsigned char sum[] = {ERL_SMALL_BIG_EXT, 9, 0, 0, 0, 0, 0, 0, 0, 0, 0x80, 1};
	assert_reply_bytes(&r, sum, sizeof sum);

	/* Not an integer: unknown, the value left alone. */
	sn_x_new(&msg);
	cr_assert_eq(ei_x_format_wo_ver(&msg, "{incr, 1.5}"), 0);
	expect_unknown(s, "w", &msg);
	ei_x_free(&msg);
	r = deliver_fmt(s, "w", 0, "get");
	assert_reply_bytes(&r, sum, sizeof sum);

	ei_x_free(&id.x);
	shard_free(s);
}

Test(shard, counter_unknown_messages)
{
	struct shard *s = new_shard(builtin("counter"));
	expect_unknown_fmt(s, "a", "foo");
	expect_unknown_fmt(s, "a", "{incr}");
	expect_unknown_fmt(s, "a", "{incr, 1, 2}");
	expect_unknown_fmt(s, "a", "{incr, 1.5}");
	expect_unknown_fmt(s, "a", "{incr, foo}");
	expect_unknown_fmt(s, "a", "{decr, 1}");
	expect_unknown_fmt(s, "a", "[incr]");
	expect_unknown_fmt(s, "a", "\"incr\"");
	expect_unknown_fmt(s, "a", "{foo, [1, {2, bar}], \"text\"}");
	expect(s, "a", "foo", "{error, {unknown_message, foo}}");
	cr_assert_eq(counter(s, "a", "get"), 0);
	shard_free(s);
}

/* ---- passivation ---- */

Test(shard, passivate_stops_a_live_entity)
{
	struct shard *s = new_shard(builtin("counter"));
	cr_assert_eq(counter(s, "a", "{incr, 3}"), 3);
	cr_assert_eq(counter(s, "b", "incr"), 1);
	expect(s, "a", "passivate", "ok");
	cr_assert_eq(s->entities.count, 1);
	cr_assert_eq(s->passivated, 1);
	cr_assert_eq(counter(s, "a", "get"), 0, "the next message starts a new incarnation");
	cr_assert_eq(counter(s, "b", "get"), 1, "others are untouched");
	cr_assert_eq(s->started, 3);
	shard_free(s);
}

Test(shard, passivate_of_a_dead_entity_creates_nothing)
{
	struct shard *s = new_shard(builtin("counter"));
	expect(s, "never", "passivate", "ok");
	cr_assert_eq(s->entities.count, 0);
	cr_assert_eq(s->started, 0);
	cr_assert_eq(s->passivated, 0);
	cr_assert_null(s->entities.slots);
	/* Only the bare atom is special: {passivate} goes to the type. */
	expect_unknown_fmt(s, "never", "{passivate}");
	cr_assert_eq(s->entities.count, 1);
	shard_free(s);
}

Test(shard, idle_passivation)
{
	struct shard *s = new_shard(builtin("counter"));
	cr_assert_eq(counter_at(s, "x", 1000, "incr"), 1);
	cr_assert_eq(counter_at(s, "y", 5000, "incr"), 1);
	cr_assert_eq(counter_at(s, "z", 3000, "incr"), 1);
	cr_assert_eq(counter_at(s, "z", 5500, "incr"), 2, "activity refreshes the stamp");

	cr_assert_eq(shard_passivate_idle(s, 5999, 5000), 0, "x idle 4999 ms: not yet");
	cr_assert_eq(shard_passivate_idle(s, 6000, 5000), 1, "x idle exactly 5000 ms");
	cr_assert_eq(s->entities.count, 2);
	cr_assert_eq(s->passivated, 1);
	cr_assert_eq(counter_at(s, "x", 6000, "get"), 0, "x was stopped");
	cr_assert_eq(counter_at(s, "y", 6000, "get"), 1, "a get is activity too");
	cr_assert_eq(counter_at(s, "z", 6000, "get"), 2);
	cr_assert_eq(shard_passivate_idle(s, 6000 + 10000, 10000), 3);
	cr_assert_eq(s->entities.count, 0);
	cr_assert_eq(shard_passivate_idle(s, 100000, 1), 0, "nothing left");
	shard_free(s);
}

Test(shard, idle_passivation_across_clock_wrap)
{
	struct shard *s = new_shard(builtin("counter"));
	/* Stamped 100 ms before the 32-bit clock wraps. */
	cr_assert_eq(counter_at(s, "old", UINT32_MAX - 99, "incr"), 1);
	/* Stamped just after the wrap. */
	cr_assert_eq(counter_at(s, "new", 50, "incr"), 1);

	/* At now = 200: old has been idle 300 ms, new 150 ms. */
	cr_assert_eq(shard_passivate_idle(s, 200, 301), 0);
	cr_assert_eq(shard_passivate_idle(s, 200, 160), 1, "old only (idle 300)");
	cr_assert_eq(counter_at(s, "new", 200, "get"), 1, "new survived");
	cr_assert_eq(counter_at(s, "old", 200, "get"), 0, "old was stopped");

	cr_assert_eq(shard_passivate_idle(s, 300, 0), 2, "with idle 0 everything goes (the get restarted old)");
	cr_assert_eq(s->entities.count, 0);

	/* Stamped exactly at UINT32_MAX, swept at 0: idle 1 ms. */
	cr_assert_eq(counter_at(s, "edge", UINT32_MAX, "incr"), 1);
	cr_assert_eq(shard_passivate_idle(s, 0, 2), 0);
	size_t n = shard_passivate_idle(s, 0, 1);
	cr_assert_eq(n, 1, "edge idle 1 ms, swept %zu", n);

	/* Stamped at 0, swept at UINT32_MAX: idle UINT32_MAX ms. */
	cr_assert_eq(counter_at(s, "zero", 0, "incr"), 1);
	cr_assert_eq(shard_passivate_idle(s, UINT32_MAX, UINT32_MAX), 1);
	shard_free(s);
}

/* ---- kv ---- */

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* kv's keys reply in no promised order: compares it, as a sorted list of
 * printed keys joined by '|', with `want`. */
static void expect_keys(struct shard *s, const char *id, const char *want)
{
	ei_x_buff r = deliver_fmt(s, id, 0, "keys");
	int i = 0, n;
	cr_assert_eq(ei_decode_list_header(r.buff, &i, &n), 0);
	char *keys[16];
	cr_assert(n >= 0 && n <= 16);
	for (int k = 0; k < n; k++) {
		keys[k] = NULL;
		cr_assert_geq(ei_s_print_term(&keys[k], r.buff, &i), 0);
	}
	if (n > 0) {
		int tail = 0;
		cr_assert_eq(ei_decode_list_header(r.buff, &i, &tail), 0);
		cr_assert_eq(tail, 0, "a proper list");
	}
	cr_assert_eq(i, r.index);
	qsort(keys, (size_t)n, sizeof keys[0], cmp_str);
	char got[512] = "";
	for (int k = 0; k < n; k++) {
		if (k)
			strcat(got, "|");
		cr_assert_lt(strlen(got) + strlen(keys[k]), sizeof got - 2);
		strcat(got, keys[k]);
		free(keys[k]);
	}
	cr_assert_str_eq(got, want);
	ei_x_free(&r);
}

Test(shard, kv_put_get_delete_keys)
{
	struct shard *s = new_shard(builtin("kv"));
	expect(s, "t", "keys", "[]");
	expect(s, "t", "{get, a}", "{error, not_found}");
	expect(s, "t", "{put, a, 1}", "ok");
	expect(s, "t", "{get, a}", "{ok, 1}");
	expect(s, "t", "{put, a, {x, [1, 2], \"s\"}}", "ok");
	expect(s, "t", "{get, a}", "{ok, {x, [1, 2], \"s\"}}");
	expect(s, "t", "{put, \"b\", b}", "ok");
	expect(s, "t", "{put, {1, 2}, c}", "ok");
	expect(s, "t", "{get, \"b\"}", "{ok, b}");
	expect(s, "t", "{get, {1, 2}}", "{ok, c}");
	expect(s, "u", "{get, a}", "{error, not_found}");
	expect_keys(s, "t", "\"b\"|a|{1, 2}");
	expect(s, "t", "{delete, a}", "ok");
	expect(s, "t", "{get, a}", "{error, not_found}");
	expect(s, "t", "{delete, a}", "ok"); /* deleting a missing key is fine */
	expect_keys(s, "t", "\"b\"|{1, 2}");
	expect(s, "t", "{delete, {1, 2}}", "ok");
	expect(s, "t", "{delete, \"b\"}", "ok");
	expect(s, "t", "keys", "[]");
	/* Many keys: the pair array grows. */
	for (int k = 0; k < 100; k++) {
		ei_x_buff msg;
		sn_x_new(&msg);
		cr_assert_eq(ei_x_format_wo_ver(&msg, "{put, ~i, ~i}", k, k * k), 0);
		struct id id = mkid("many");
		ei_x_buff r = deliver_at(s, &id, &msg, 0);
		assert_reply(&r, "ok");
		ei_x_free(&msg);
		ei_x_free(&id.x);
	}
	expect(s, "many", "{get, 99}", "{ok, 9801}");
	expect(s, "many", "{get, 0}", "{ok, 0}");
	expect(s, "many", "{delete, 0}", "ok");
	expect(s, "many", "{get, 99}", "{ok, 9801}");
	expect(s, "many", "{get, 50}", "{ok, 2500}");
	expect(s, "many", "{get, 0}", "{error, not_found}");
	expect(s, "many", "{get, 100}", "{error, not_found}");
	shard_free(s); /* kv's stop frees every pair */
}

/* Sends {Op, <key bytes>} or {Op, <key bytes>, Value}. */
static ei_x_buff kv_raw(struct shard *s, const char *op, const void *key, size_t key_len, const char *value)
{
	ei_x_buff msg;
	sn_x_new(&msg);
	cr_assert_eq(ei_x_encode_tuple_header(&msg, value ? 3 : 2), 0);
	cr_assert_eq(ei_x_encode_atom(&msg, op), 0);
	cr_assert_eq(ei_x_append_buf(&msg, key, (int)key_len), 0);
	if (value)
		cr_assert_eq(ei_x_encode_atom(&msg, value), 0);
	struct id id = mkid("enc");
	ei_x_buff r = deliver_at(s, &id, &msg, 0);
	ei_x_free(&msg);
	ei_x_free(&id.x);
	return r;
}

Test(shard, kv_equal_keys_in_different_encodings)
{
	struct shard *s = new_shard(builtin("kv"));
	static const unsigned char small5[] = {ERL_SMALL_INTEGER_EXT, 5};
	static const unsigned char int5[] = {ERL_INTEGER_EXT, 0, 0, 0, 5};
	static const unsigned char big5[] = {ERL_SMALL_BIG_EXT, 2, 0, 5, 0}; /* a padded bignum */
	ei_x_buff r = kv_raw(s, "put", small5, sizeof small5, "five");
	assert_reply(&r, "ok");
	r = kv_raw(s, "get", int5, sizeof int5, NULL);
	assert_reply(&r, "{ok, five}");
	r = kv_raw(s, "get", big5, sizeof big5, NULL);
	assert_reply(&r, "{ok, five}");
	/* Overwriting through another encoding hits the same slot. */
	r = kv_raw(s, "put", int5, sizeof int5, "cinq");
	assert_reply(&r, "ok");
	r = kv_raw(s, "get", small5, sizeof small5, NULL);
	assert_reply(&r, "{ok, cinq}");
	r = deliver_fmt(s, "enc", 0, "keys");
	assert_reply(&r, "[5]");

	/* The atom abc as latin1 ATOM_EXT and as SMALL_ATOM_UTF8_EXT. */
	static const unsigned char latin[] = {ERL_ATOM_EXT, 0, 3, 'a', 'b', 'c'};
	static const unsigned char utf8[] = {ERL_SMALL_ATOM_UTF8_EXT, 3, 'a', 'b', 'c'};
	r = kv_raw(s, "put", latin, sizeof latin, "v");
	assert_reply(&r, "ok");
	r = kv_raw(s, "get", utf8, sizeof utf8, NULL);
	assert_reply(&r, "{ok, v}");

	/* "ab" as STRING_EXT and as LIST_EXT of small integers. */
	static const unsigned char str[] = {ERL_STRING_EXT, 0, 2, 'a', 'b'};
	static const unsigned char lst[] = {ERL_LIST_EXT, 0, 0, 0, 2, ERL_SMALL_INTEGER_EXT, 'a',
					    ERL_SMALL_INTEGER_EXT, 'b', ERL_NIL_EXT};
	r = kv_raw(s, "put", lst, sizeof lst, "w");
	assert_reply(&r, "ok");
	r = kv_raw(s, "get", str, sizeof str, NULL);
	assert_reply(&r, "{ok, w}");
	r = kv_raw(s, "delete", str, sizeof str, NULL);
	assert_reply(&r, "ok");
	r = kv_raw(s, "get", lst, sizeof lst, NULL);
	assert_reply(&r, "{error, not_found}");

	/* 5 and 5.0 are different keys. */
	r = kv_raw(s, "get", (const unsigned char[]){NEW_FLOAT_EXT, 0x40, 0x14, 0, 0, 0, 0, 0, 0}, 9, NULL);
	assert_reply(&r, "{error, not_found}");
	shard_free(s);
}

Test(shard, kv_keys_that_are_not_entity_ids)
{
	/* Pids and refs are not canonical terms; kv keeps them as sent. */
	struct shard *s = new_shard(builtin("kv"));
	erlang_pid pid = sn_pid("p@127.0.0.1", 42, 0);
	ei_x_buff key;
	sn_x_new(&key);
	cr_assert_eq(ei_x_encode_pid(&key, &pid), 0);
	ei_x_buff r = kv_raw(s, "put", key.buff, (size_t)key.index, "owner");
	assert_reply(&r, "ok");
	r = kv_raw(s, "get", key.buff, (size_t)key.index, NULL);
	assert_reply(&r, "{ok, owner}");
	erlang_pid other = sn_pid("p@127.0.0.1", 43, 0);
	ei_x_buff key2;
	sn_x_new(&key2);
	cr_assert_eq(ei_x_encode_pid(&key2, &other), 0);
	r = kv_raw(s, "get", key2.buff, (size_t)key2.index, NULL);
	assert_reply(&r, "{error, not_found}");
	ei_x_free(&key);
	ei_x_free(&key2);
	shard_free(s);
}

Test(shard, kv_unknown_messages)
{
	struct shard *s = new_shard(builtin("kv"));
	expect_unknown_fmt(s, "t", "foo");
	expect_unknown_fmt(s, "t", "{put, a}");
	expect_unknown_fmt(s, "t", "{get, a, b}");
	expect_unknown_fmt(s, "t", "{delete, a, b}");
	expect_unknown_fmt(s, "t", "{keys}");
	expect_unknown_fmt(s, "t", "{frob, 1}");
	expect_unknown_fmt(s, "t", "{1, 2}");
	expect_unknown_fmt(s, "t", "{\"put\", a, b}");
	expect_unknown_fmt(s, "t", "{put, a, b, c}");
	expect_unknown_fmt(s, "t", "[put, a, b]");
	expect_unknown_fmt(s, "t", "42");
	expect(s, "t", "keys", "[]");
	shard_free(s);
}

/* ---- echo ---- */

Test(shard, echo_returns_the_message)
{
	struct shard *s = new_shard(builtin("echo"));
	static const char *const msgs[] = {
		"hello", "42", "{a, [1, 2, 3], \"xyz\", 3.5}", "[]", "{}", "{passivate, now}", "-123456789012",
	};
	for (size_t k = 0; k < SN_ARRAY_LEN(msgs); k++) {
		ei_x_buff msg;
		sn_x_new(&msg);
		cr_assert_eq(ei_x_format_wo_ver(&msg, msgs[k]), 0, "%s", msgs[k]);
		struct id id = mkid("e");
		ei_x_buff r = deliver_at(s, &id, &msg, 0);
		cr_assert_eq(r.index, msg.index, "%s", msgs[k]);
		cr_assert_eq(memcmp(r.buff, msg.buff, (size_t)msg.index), 0, "%s", msgs[k]);
		ei_x_free(&r);
		ei_x_free(&msg);
		ei_x_free(&id.x);
	}
	/* A binary with every byte value, echoed byte for byte. */
	char bin[256];
	for (int k = 0; k < 256; k++)
		bin[k] = (char)k;
	ei_x_buff msg;
	sn_x_new(&msg);
	cr_assert_eq(ei_x_encode_binary(&msg, bin, 256), 0);
	struct id id = mkid("e");
	ei_x_buff r = deliver_at(s, &id, &msg, 0);
	cr_assert_eq(r.index, msg.index);
	cr_assert_eq(memcmp(r.buff, msg.buff, (size_t)msg.index), 0);
	ei_x_free(&r);
	ei_x_free(&msg);
	ei_x_free(&id.x);
	expect(s, "e", "passivate", "ok");
	cr_assert_eq(s->entities.count, 0, "passivate is the node's, not echoed");
	shard_free(s);
}

/* ---- test types: lifecycle accounting ---- */

#define MAGIC 0x5ca1ab1eu

struct probe_state {
	uint32_t magic;
	uint32_t messages;
	char *owned; /* released in stop */
};

static int probe_starts, probe_stops, probe_bad_stops;

static int probe_start(void *state, const char *id, size_t id_len)
{
	struct probe_state *p = state;
	cr_assert_eq(p->magic, 0, "state is zeroed before start");
	cr_assert_eq(p->owned, NULL);
	/* The id is passed as delivered. */
	size_t end = 0;
	cr_assert_eq(term_validate(id, id_len, &end), 0);
	cr_assert_eq(end, id_len);
	p->magic = MAGIC;
	p->owned = malloc(32);
	cr_assert_not_null(p->owned);
	probe_starts++;
	return 0;
}

static enum entity_after probe_handle(void *state, const char *msg, size_t len, ei_x_buff *reply)
{
	struct probe_state *p = state;
	cr_assert_eq(p->magic, MAGIC, "handle sees the state start set up");
	p->messages++;
	if (term_is_atom(msg, 0, "stop")) {
		ei_x_encode_atom(reply, "stopping");
		return ENTITY_STOP;
	}
	if (term_is_atom(msg, 0, "silent"))
		return ENTITY_CONTINUE; /* forgets to reply */
	if (term_is_atom(msg, 0, "half")) {
		/* A reply cut short, as an encoder out of memory leaves it: a
		 * 2-tuple with one element. */
		ei_x_encode_tuple_header(reply, 2);
		ei_x_encode_atom(reply, "ok");
		return ENTITY_CONTINUE;
	}
	if (term_is_atom(msg, 0, "garbage")) {
		static const char bad[] = {(char)255, 1, 2};
		ei_x_append_buf(reply, bad, sizeof bad);
		return ENTITY_CONTINUE;
	}
	if (term_is_atom(msg, 0, "count")) {
		ei_x_encode_ulong(reply, p->messages);
		return ENTITY_CONTINUE;
	}
	entity_reply_unknown(reply, msg, len);
	return ENTITY_CONTINUE;
}

static void probe_stop(void *state)
{
	struct probe_state *p = state;
	if (p->magic != MAGIC)
		probe_bad_stops++;
	free(p->owned);
	p->owned = NULL;
	p->magic = 0;
	probe_stops++;
}

static const struct entity_type probe_type = {
	.api_version = ENTITY_API_VERSION,
	.name = "probe",
	.state_size = sizeof(struct probe_state),
	.start = probe_start,
	.handle = probe_handle,
	.stop = probe_stop,
};

Test(shard, handle_asking_to_stop)
{
	probe_starts = probe_stops = probe_bad_stops = 0;
	struct shard *s = new_shard(&probe_type);
	expect(s, "a", "count", "1");
	expect(s, "a", "count", "2");
	expect(s, "a", "stop", "stopping");
	cr_assert_eq(probe_stops, 1);
	cr_assert_eq(s->entities.count, 0);
	cr_assert_eq(s->passivated, 1);
	expect(s, "a", "count", "1");
	cr_assert_eq(probe_starts, 2);
	shard_free(s);
	cr_assert_eq(probe_stops, 2);
	cr_assert_eq(probe_bad_stops, 0);
}

Test(shard, a_handle_without_reply_answers_unknown)
{
	probe_starts = probe_stops = probe_bad_stops = 0;
	struct shard *s = new_shard(&probe_type);
	expect(s, "a", "silent", "{error, {unknown_message, silent}}");
	expect(s, "a", "count", "2");
	shard_free(s);
}

Test(shard, a_reply_that_is_no_whole_term_becomes_an_error)
{
	probe_starts = probe_stops = probe_bad_stops = 0;
	struct shard *s = new_shard(&probe_type);
	expect(s, "a", "half", "{error, invalid_reply}");
	expect(s, "a", "garbage", "{error, invalid_reply}");
	expect(s, "a", "count", "3");
	shard_free(s);
}

Test(shard, shard_free_stops_every_entity)
{
	probe_starts = probe_stops = probe_bad_stops = 0;
	struct shard *s = new_shard(&probe_type);
	for (int k = 0; k < 50; k++) {
		ei_x_buff msg;
		sn_x_new(&msg);
		cr_assert_eq(ei_x_encode_atom(&msg, "count"), 0);
		struct id id;
		sn_x_new(&id.x);
		cr_assert_eq(ei_x_encode_long(&id.x, k), 0);
		ei_x_buff r = deliver_at(s, &id, &msg, (uint32_t)k);
		assert_reply(&r, "1");
		ei_x_free(&msg);
		ei_x_free(&id.x);
	}
	for (int k = 0; k < 5; k++) {
		struct id id;
		sn_x_new(&id.x);
		cr_assert_eq(ei_x_encode_long(&id.x, k), 0);
		ei_x_buff msg;
		sn_x_new(&msg);
		cr_assert_eq(ei_x_encode_atom(&msg, "passivate"), 0);
		ei_x_buff r = deliver_at(s, &id, &msg, 100);
		assert_reply(&r, "ok");
		ei_x_free(&msg);
		ei_x_free(&id.x);
	}
	cr_assert_eq(probe_starts, 50);
	cr_assert_eq(probe_stops, 5);
	cr_assert_eq(s->entities.count, 45);
	/* Idle sweep at 60: ids 5..9, last active at 5..9, are idle 51 ms or more. */
	cr_assert_eq(shard_passivate_idle(s, 60, 51), 5);
	cr_assert_eq(probe_stops, 10);
	shard_free(s);
	cr_assert_eq(probe_stops, 50, "every live entity stopped once");
	cr_assert_eq(probe_bad_stops, 0);
	shard_free(NULL);
}

/* A type whose start fails, for ids other than <<"good">>. */
static int picky_stops;

static int picky_start(void *state, const char *id, size_t id_len)
{
	(void)state;
	static const char good[] = {ERL_BINARY_EXT, 0, 0, 0, 4, 'g', 'o', 'o', 'd'};
	if (id_len == sizeof good && memcmp(id, good, sizeof good) == 0)
		return 0;
	return -EACCES;
}

static enum entity_after picky_handle(void *state, const char *msg, size_t len, ei_x_buff *reply)
{
	(void)state;
	term_x_append_raw(reply, msg, len);
	return ENTITY_CONTINUE;
}

static void picky_stop(void *state)
{
	(void)state;
	picky_stops++;
}

static const struct entity_type picky_type = {
	.api_version = ENTITY_API_VERSION,
	.name = "picky",
	.state_size = 16,
	.start = picky_start,
	.handle = picky_handle,
	.stop = picky_stop,
};

Test(shard, start_failure)
{
	picky_stops = 0;
	struct shard *s = new_shard(&picky_type);
	ei_x_buff r = deliver_fmt(s, "bad", 0, "hello");
	/* {error, {entity_start_failed, Errno}}, Errno as start returned it. */
	int i = 0, arity;
	char atom[MAXATOMLEN_UTF8];
	long err;
	cr_assert_eq(ei_decode_tuple_header(r.buff, &i, &arity), 0);
	cr_assert_eq(arity, 2);
	cr_assert_eq(ei_decode_atom(r.buff, &i, atom), 0);
	cr_assert_str_eq(atom, "error");
	cr_assert_eq(ei_decode_tuple_header(r.buff, &i, &arity), 0);
	cr_assert_eq(arity, 2);
	cr_assert_eq(ei_decode_atom(r.buff, &i, atom), 0);
	cr_assert_str_eq(atom, "entity_start_failed");
	cr_assert_eq(ei_decode_long(r.buff, &i, &err), 0);
	cr_assert_eq(err, -EACCES);
	cr_assert_eq(i, r.index);
	ei_x_free(&r);

	cr_assert_eq(s->entities.count, 0, "no entity left behind");
	cr_assert_null(s->entities.slots);
	cr_assert_eq(s->started, 0);
	cr_assert_eq(picky_stops, 0, "stop is not called for an entity that never started");

	expect(s, "good", "hello", "hello");
	expect(s, "bad", "again", "{error, {entity_start_failed, -13}}");
	cr_assert_eq(s->entities.count, 1);
	cr_assert_eq(s->started, 1);
	expect(s, "bad", "passivate", "ok");
	cr_assert_eq(picky_stops, 0);
	shard_free(s);
	cr_assert_eq(picky_stops, 1);
}

/* A type with no start and no stop callbacks. */
static enum entity_after bare_handle(void *state, const char *msg, size_t len, ei_x_buff *reply)
{
	(void)state;
	(void)msg;
	(void)len;
	ei_x_encode_atom(reply, "bare");
	return ENTITY_STOP;
}

Test(shard, optional_callbacks)
{
	static const struct entity_type bare = {
		.api_version = ENTITY_API_VERSION, .name = "bare", .state_size = 0, .handle = bare_handle};
	struct shard *s = new_shard(&bare);
	expect(s, "a", "x", "bare");
	cr_assert_eq(s->entities.count, 0);
	expect(s, "a", "x", "bare");
	cr_assert_eq(s->started, 2);
	cr_assert_eq(s->passivated, 2);
	shard_free(s);
}

/* ---- the observer (remembered entities) ---- */

struct seen {
	int started, stopped;
	uint32_t shard;
	char last[64];
	size_t last_len;
};

static void saw_start(void *arg, uint32_t shard, const char *id, size_t len)
{
	struct seen *w = arg;
	w->started++;
	w->shard = shard;
	cr_assert(len <= sizeof w->last);
	memcpy(w->last, id, len);
	w->last_len = len;
}

static void saw_stop(void *arg, uint32_t shard, const char *id, size_t len)
{
	struct seen *w = arg;
	w->stopped++;
	w->shard = shard;
	cr_assert(len <= sizeof w->last);
	memcpy(w->last, id, len);
	w->last_len = len;
}

static void assert_last_id(const struct seen *w, const char *text)
{
	struct id id = mkid(text);
	cr_assert_eq(w->last_len, (size_t)id.x.index);
	cr_assert_eq(memcmp(w->last, id.x.buff, w->last_len), 0);
	ei_x_free(&id.x);
}

Test(shard, the_observer_hears_starts_and_stops_for_good_only)
{
	struct seen w = {0};
	struct shard *s = new_shard(builtin("counter"));
	s->observer = (struct shard_observer){saw_start, saw_stop, &w};
	cr_assert_eq(counter(s, "a", "incr"), 1);
	cr_assert_eq(w.started, 1);
	cr_assert_eq(w.shard, 7);
	assert_last_id(&w, "a");
	cr_assert_eq(counter(s, "a", "incr"), 2);
	cr_assert_eq(w.started, 1, "a live entity does not start again");
	expect(s, "a", "passivate", "ok");
	cr_assert_eq(w.stopped, 1);
	assert_last_id(&w, "a");
	expect(s, "never", "passivate", "ok");
	cr_assert_eq(w.stopped, 1, "passivating a dead entity stops nothing");

	cr_assert_eq(counter_at(s, "idle", 100, "incr"), 1);
	cr_assert_eq(shard_passivate_idle(s, 5000, 1000), 1);
	cr_assert_eq(w.stopped, 2);
	assert_last_id(&w, "idle");

	cr_assert_eq(counter(s, "kept", "incr"), 1);
	shard_free(s);
	cr_assert_eq(w.stopped, 2, "entities stopped with their shard live on elsewhere");
}

Test(shard, start_entity_without_a_message)
{
	struct seen w = {0};
	struct shard *s = new_shard(builtin("counter"));
	s->observer = (struct shard_observer){saw_start, saw_stop, &w};
	struct id id = mkid("r");
	char *idc = sn_dup_exact(id.x.buff, (size_t)id.x.index);
	cr_assert_eq(shard_start_entity(s, idc, (size_t)id.x.index, 0), 0);
	cr_assert_eq(s->entities.count, 1);
	cr_assert_eq(w.started, 1);
	cr_assert_eq(shard_start_entity(s, idc, (size_t)id.x.index, 0), 0, "already live is fine");
	cr_assert_eq(w.started, 1);
	cr_assert_eq(counter(s, "r", "get"), 0, "a remembered entity starts with fresh state");
	free(idc);
	ei_x_free(&id.x);
	shard_free(s);
}

Test(shard, start_entity_that_refuses)
{
	picky_stops = 0;
	struct shard *s = new_shard(&picky_type);
	struct id id = mkid("bad");
	cr_assert_eq(shard_start_entity(s, id.x.buff, (size_t)id.x.index, 0), -ECANCELED);
	cr_assert_eq(s->entities.count, 0, "nothing left behind");
	ei_x_free(&id.x);
	shard_free(s);
	cr_assert_eq(picky_stops, 0);
}

/* ---- the active-entity limit ---- */

static bool live(struct shard *s, const char *text)
{
	struct id id = mkid(text);
	bool l = shard_entity_live(s, id.x.buff, (size_t)id.x.index);
	ei_x_free(&id.x);
	return l;
}

Test(shard_limit, the_least_recently_used_is_passivated_beyond_the_limit_across_shards)
{
	struct shard_limit limit;
	cr_assert_eq(shard_limit_init(&limit, 3, false), 0);
	struct shard *a = shard_new(0, builtin("counter")), *b = shard_new(1, builtin("counter"));
	shard_set_limit(a, &limit);
	shard_set_limit(b, &limit);
	cr_assert_eq(counter_at(a, "x", 1, "incr"), 1);
	cr_assert_eq(counter_at(b, "y", 2, "incr"), 1);
	cr_assert_eq(counter_at(a, "z", 3, "incr"), 1);
	cr_assert_eq(limit.lru.count, 3);
	/* x used again: y is now the least recently used */
	cr_assert_eq(counter_at(a, "x", 4, "incr"), 2);
	cr_assert_eq(counter_at(b, "w", 5, "incr"), 1);
	cr_assert(!live(b, "y"), "y, the least recently used, passivated (in the other shard)");
	cr_assert(live(a, "x") && live(a, "z") && live(b, "w"));
	cr_assert_eq(limit.passivated, 1);
	cr_assert_eq(limit.lru.count, 3);
	cr_assert_eq(a->entities.count + b->entities.count, 3);
	/* y starts again from nothing (no store here), z goes */
	cr_assert_eq(counter_at(b, "y", 6, "incr"), 1);
	cr_assert(!live(a, "z"));
	cr_assert_eq(limit.passivated, 2);
	/* a passivate, a stop and a shard freed leave the list */
	ei_x_buff r = deliver_fmt(a, "x", 7, "passivate");
	assert_reply(&r, "ok");
	cr_assert_eq(limit.lru.count, 2);
	shard_free(b);
	cr_assert_eq(limit.lru.count, 0);
	shard_free(a);
	cr_assert_eq(limit.passivated, 2, "none of those counted as the limit's");
}

Test(shard_limit, a_limit_of_one_keeps_the_entity_just_started)
{
	struct shard_limit limit;
	cr_assert_eq(shard_limit_init(&limit, 1, false), 0);
	struct shard *a = shard_new(0, builtin("counter"));
	shard_set_limit(a, &limit);
	for (int k = 0; k < 100; k++) {
		char id[16];
		snprintf(id, sizeof id, "e%d", k % 7);
		cr_assert_eq(counter_at(a, id, (uint32_t)k, "incr"), 1, "each starts afresh");
		cr_assert_eq(a->entities.count, 1);
		cr_assert(live(a, id));
	}
	cr_assert_eq(limit.passivated, 99);
	shard_free(a);
	cr_assert_eq(limit.lru.count, 0);
}

Test(shard_limit, idle_passivation_and_a_restore_keep_the_list_right)
{
	struct shard_limit limit;
	cr_assert_eq(shard_limit_init(&limit, 10, false), 0);
	struct shard *a = shard_new(0, builtin("counter"));
	shard_set_limit(a, &limit);
	for (int k = 0; k < 10; k++) {
		char id[16];
		snprintf(id, sizeof id, "e%d", k);
		cr_assert_eq(counter_at(a, id, (uint32_t)(k < 5 ? 0 : 1000), "incr"), 1);
	}
	cr_assert_eq(shard_passivate_idle(a, 1000, 1000), 5);
	cr_assert_eq(limit.lru.count, 5);
	struct id id = mkid("restored");
	ei_x_buff state;
	sn_x_new(&state);
	cr_assert_eq(ei_x_encode_long(&state, 41), 0);
	cr_assert_eq(shard_restore_entity(a, id.x.buff, (size_t)id.x.index, state.buff, (size_t)state.index, 1001), 1);
	ei_x_free(&state);
	ei_x_free(&id.x);
	cr_assert_eq(limit.lru.count, 6);
	cr_assert_eq(counter_at(a, "restored", 1002, "incr"), 42);
	shard_free(a);
	cr_assert_eq(limit.lru.count, 0);
	cr_assert_eq(limit.passivated, 0);
}

static bool only_shard_0(void *arg, const struct shard *s, const struct entity *e)
{
	(void)arg, (void)e;
	return s->id == 0;
}

Test(shard_limit, a_shard_that_may_not_lose_entities_is_passed_over)
{
	struct shard_limit limit;
	cr_assert_eq(shard_limit_init(&limit, 2, false), 0);
	limit.may_evict = only_shard_0;
	struct shard *a = shard_new(0, builtin("counter")), *frozen = shard_new(1, builtin("counter"));
	shard_set_limit(a, &limit);
	shard_set_limit(frozen, &limit);
	cr_assert_eq(counter_at(frozen, "f1", 1, "incr"), 1);
	cr_assert_eq(counter_at(frozen, "f2", 2, "incr"), 1);
	/* beyond the limit, but only the frozen shard's entities are there:
	 * they stay, and the limit is exceeded for now */
	cr_assert_eq(counter_at(a, "x", 3, "incr"), 1);
	cr_assert(live(frozen, "f1") && live(frozen, "f2") && live(a, "x"));
	cr_assert_eq(limit.passivated, 0);
	/* the next start passes over f1 and f2 (now the most recent) to x */
	cr_assert_eq(counter_at(a, "y", 4, "incr"), 1);
	cr_assert(!live(a, "x"));
	cr_assert(live(frozen, "f1") && live(frozen, "f2") && live(a, "y"));
	cr_assert_eq(limit.passivated, 1);
	shard_free(a);
	shard_free(frozen);
	cr_assert_eq(limit.lru.count, 0);
}

Test(shard_limit, by_frequency_the_least_often_asked_of_the_least_recent_goes)
{
	struct shard_limit limit;
	cr_assert_eq(shard_limit_init(&limit, 4, true), 0);
	struct shard *a = shard_new(0, builtin("counter"));
	shard_set_limit(a, &limit);
	/* hot: asked 10 times first; then three asked once each */
	for (int k = 0; k < 10; k++)
		cr_assert_eq(counter_at(a, "hot", (uint32_t)k, "incr"), k + 1);
	cr_assert_eq(counter_at(a, "c1", 20, "incr"), 1);
	cr_assert_eq(counter_at(a, "c2", 21, "incr"), 1);
	cr_assert_eq(counter_at(a, "c3", 22, "incr"), 1);
	/* c4, asked once, is no more frequent than c1, the coldest: it goes
	 * itself after its message */
	cr_assert_eq(counter_at(a, "c4", 23, "incr"), 1);
	cr_assert(!live(a, "c4"));
	/* asked again, it is let in; hot is the least recently used, but the
	 * least often asked of the oldest goes: c1 */
	cr_assert_eq(counter_at(a, "c4", 24, "incr"), 1);
	cr_assert(live(a, "c4"));
	cr_assert(live(a, "hot"), "the frequent entity stays");
	cr_assert(!live(a, "c1"));
	cr_assert_eq(counter_at(a, "hot", 25, "incr"), 11);
	shard_free(a);
	shard_limit_free(&limit);
}

Test(shard_limit, a_one_off_does_not_push_out_entities_asked_again_and_again)
{
	struct shard_limit limit;
	cr_assert_eq(shard_limit_init(&limit, 2, true), 0);
	struct shard *a = shard_new(0, builtin("counter"));
	shard_set_limit(a, &limit);
	for (int k = 0; k < 5; k++) {
		cr_assert_eq(counter_at(a, "h1", (uint32_t)k, "incr"), k + 1);
		cr_assert_eq(counter_at(a, "h2", (uint32_t)k, "incr"), k + 1);
	}
	/* asked once: it answers, then goes itself */
	cr_assert_eq(counter_at(a, "once", 10, "incr"), 1);
	cr_assert(!live(a, "once"));
	cr_assert(live(a, "h1") && live(a, "h2"));
	cr_assert_eq(limit.passivated, 1);
	/* asked often enough, a newcomer is let in and the coldest goes */
	for (int k = 0; k < 8; k++)
		(void)counter_at(a, "riser", (uint32_t)(20 + k), "incr");
	cr_assert(live(a, "riser"));
	cr_assert_eq(a->entities.count, 2);
	shard_free(a);
	shard_limit_free(&limit);
}

/* A type run on a host gets its messages past shard_deliver: its region
 * touches the entity instead, which makes it the most recent and holds the
 * limit (an entity restored from the store, say, pushes the least recently
 * used out then). */
Test(shard_limit, a_touched_entity_is_the_most_recent_and_the_limit_holds)
{
	struct shard_limit limit;
	cr_assert_eq(shard_limit_init(&limit, 2, false), 0);
	struct shard *a = shard_new(0, builtin("counter"));
	shard_set_limit(a, &limit);
	const char *names[] = {"x", "y", "z"};
	struct id ids[3];
	for (int k = 0; k < 3; k++)
		ids[k] = mkid(names[k]);
	cr_assert_eq(shard_start_entity(a, ids[0].x.buff, (size_t)ids[0].x.index, 1), 0);
	cr_assert_eq(shard_start_entity(a, ids[1].x.buff, (size_t)ids[1].x.index, 2), 0);
	/* restored past the limit's check: three live */
	cr_assert_eq(shard_restore_entity(a, ids[2].x.buff, (size_t)ids[2].x.index, NULL, 0, 3), 1);
	cr_assert_eq(limit.lru.count, 3);
	/* x touched: now y is the least recent, and goes */
	struct entity *x = entity_table_find(&a->entities, ids[0].x.buff, (size_t)ids[0].x.index,
					     entity_table_hash(ids[0].x.buff, (size_t)ids[0].x.index));
	cr_assert_not_null(x);
	shard_touch_entity(a, x, 4);
	cr_assert(live(a, "x") && !live(a, "y") && live(a, "z"));
	cr_assert_eq(x->last_active, 4u);
	cr_assert_eq(limit.passivated, 1);
	for (int k = 0; k < 3; k++)
		ei_x_free(&ids[k].x);
	shard_free(a);
}

/* ---- a look at an entity (shard_peek_entity) ---- */

static void expect_peek(struct shard *s, const char *id_text, const char *want)
{
	struct id id = mkid(id_text);
	ei_x_buff reply;
	sn_x_new(&reply);
	cr_assert_eq(shard_peek_entity(s, id.x.buff, (size_t)id.x.index, &reply), 0);
	ei_x_free(&id.x);
	assert_reply(&reply, want);
}

Test(shard, a_look_answers_the_state_and_starts_nothing)
{
	struct shard *s = new_shard(builtin("counter"));
	expect_peek(s, "a", "{error, not_running}");
	cr_assert_eq(s->entities.count, 0, "a look starts nothing");
	cr_assert_eq(s->started, 0);
	cr_assert_eq(counter(s, "a", "{incr, 3}"), 3);
	expect_peek(s, "a", "{ok, 3}");
	cr_assert_eq(s->started, 1);
	shard_free(s);

	s = new_shard(builtin("echo"));
	expect(s, "e", "hello", "hello");
	expect_peek(s, "e", "{error, no_state}");
	shard_free(s);
}

/* Each incarnation's start and end reaches the instance hook, the
 * shard's own end included; without a hook nothing is called. */
struct instance_events {
	int started, stopped;
};

static void count_instance(void *arg, const struct shard *s, const char *id, size_t len, bool started)
{
	(void)s;
	(void)id;
	(void)len;
	struct instance_events *ev = arg;
	if (started)
		ev->started++;
	else
		ev->stopped++;
}

Test(shard, every_incarnation_reaches_the_instance_hook)
{
	struct instance_events ev = {0};
	struct shard *s = new_shard(builtin("counter"));
	s->instances = (struct shard_instance_hook){count_instance, &ev};
	cr_assert_eq(counter(s, "a", "incr"), 1);
	cr_assert_eq(counter(s, "b", "incr"), 1);
	expect(s, "a", "passivate", "ok");
	cr_assert_eq(counter(s, "a", "incr"), 1);
	cr_assert_eq(ev.started, 3);
	cr_assert_eq(ev.stopped, 1);
	shard_free(s);
	cr_assert_eq(ev.stopped, 3, "the shard's end ends its entities' incarnations");
}
