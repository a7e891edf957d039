/*
 * test_entity_state.c — entity API v2: the built-ins' states as terms and
 * back, what handle says it changed, and a v1 type read without touching
 * the fields it does not have.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <ei.h>

#include "entity/entity_builtin.h"
#include "entity/entity_kv.h"
#include "entity/entity_type.h"
#include "etf/term.h"
#include "unit_helpers.h"

static const struct entity_type *builtin(const char *name)
{
	for (const struct entity_type *const *t = entity_builtin_types(); *t; t++)
		if (strcmp((*t)->name, name) == 0)
			return *t;
	cr_assert_fail("no built-in %s", name);
	return NULL;
}

/* Sends the term written as `fmt` (ei_x_format) to the entity; the reply,
 * printed, into out (freed by the caller). */
static enum entity_after send_msg(const struct entity_type *t, void *state, const char *fmt, char **out)
{
	ei_x_buff msg, reply;
	sn_x_new(&msg);
	cr_assert_eq(ei_x_format_wo_ver(&msg, fmt), 0, "%s", fmt);
	char *m = sn_dup_exact(msg.buff, (size_t)msg.index);
	sn_x_new(&reply);
	enum entity_after a = t->handle(state, m, (size_t)msg.index, &reply);
	int i = 0;
	*out = NULL;
	cr_assert_geq(ei_s_print_term(out, reply.buff, &i), 0);
	free(m);
	ei_x_free(&msg);
	ei_x_free(&reply);
	return a;
}

static void expect(const struct entity_type *t, void *state, const char *fmt, const char *reply, bool changed)
{
	char *got;
	enum entity_after a = send_msg(t, state, fmt, &got);
	cr_assert_str_eq(got, reply, "%s", fmt);
	cr_assert_eq(entity_after_changed(t, a), changed, "%s: changed", fmt);
	cr_assert_not(entity_after_stops(a), "%s", fmt);
	free(got);
}

/* encode_state, then decode_state into a fresh state (exact-size input, so
 * any over-read is reported), which is returned. */
static void *carry(const struct entity_type *t, const void *state, char **printed)
{
	ei_x_buff st;
	sn_x_new(&st);
	cr_assert_eq(t->encode_state(state, &st), 0);
	int i = 0;
	*printed = NULL; /* ei_s_print_term reallocs it */
	cr_assert_geq(ei_s_print_term(printed, st.buff, &i), 0);
	cr_assert_eq(i, st.index, "one term");
	char *exact = sn_dup_exact(st.buff, (size_t)st.index);
	void *fresh = calloc(1, t->state_size ? t->state_size : 1);
	cr_assert_not_null(fresh);
	cr_assert_eq(t->decode_state(fresh, exact, (size_t)st.index), 0);
	free(exact);
	ei_x_free(&st);
	return fresh;
}

static int decode_fmt(const struct entity_type *t, void *state, const char *fmt)
{
	ei_x_buff x;
	sn_x_new(&x);
	cr_assert_eq(ei_x_format_wo_ver(&x, fmt), 0);
	char *exact = sn_dup_exact(x.buff, (size_t)x.index);
	int rc = t->decode_state(state, exact, (size_t)x.index);
	free(exact);
	ei_x_free(&x);
	return rc;
}

Test(entity_state, counter_says_what_changed_and_carries_its_value)
{
	const struct entity_type *t = builtin("counter");
	cr_assert(entity_type_keeps_state(t));
	struct entity_int v = {0};
	expect(t, &v, "get", "0", false);
	expect(t, &v, "incr", "1", true);
	expect(t, &v, "{incr, 41}", "42", true);
	expect(t, &v, "{incr, 0}", "42", false);
	expect(t, &v, "decr", "41", true);
	expect(t, &v, "nonsense", "{error, {unknown_message, nonsense}}", false);
	expect(t, &v, "{incr, foo}", "{error, {unknown_message, {incr, foo}}}", false);
	entity_int_set_i64(&v, -5000000000LL);
	char *printed;
	struct entity_int *w = carry(t, &v, &printed);
	cr_assert_str_eq(printed, "-5000000000", "the state is the integer");
	cr_assert_eq(entity_int_compare(w, &v), 0);
	free(printed);
	cr_assert_eq(decode_fmt(t, w, "foo"), -EPROTO);
	cr_assert_eq(decode_fmt(t, w, "1.5"), -EPROTO);
	cr_assert_eq(decode_fmt(t, w, "[1]"), -EPROTO);
	cr_assert_eq(entity_int_compare(w, &v), 0, "a refused state leaves the value");
	t->stop(w);
	free(w);
	/* past 64 bits, a bignum: carried as one */
	entity_int_set_i64(&v, INT64_MAX);
	expect(t, &v, "incr", "9223372036854775808", true);
	expect(t, &v, "{incr, 9223372036854775807}", "18446744073709551615", true);
	w = carry(t, &v, &printed);
	cr_assert_str_eq(printed, "18446744073709551615");
	cr_assert_eq(entity_int_compare(w, &v), 0);
	free(printed);
	t->stop(w);
	free(w);
	t->stop(&v);
}

Test(entity_state, kv_carries_its_map_with_keys_as_terms)
{
	const struct entity_type *t = &entity_kv_type;
	cr_assert(entity_type_keeps_state(t));
	void *kv = calloc(1, t->state_size);
	expect(t, kv, "{get, a}", "{error, not_found}", false);
	expect(t, kv, "{put, a, 1}", "ok", true);
	expect(t, kv, "{put, \"ab\", {x, [1,2]}}", "ok", true);
	expect(t, kv, "{put, a, 2}", "ok", true);
	expect(t, kv, "{delete, zz}", "ok", false);
	expect(t, kv, "keys", "[a, \"ab\"]", false);
	char *printed;
	void *copy = carry(t, kv, &printed);
	cr_assert_str_eq(printed, "#{a => 2, \"ab\" => {x, [1, 2]}}");
	free(printed);
	expect(t, copy, "{get, a}", "{ok, 2}", false);
	expect(t, copy, "{get, [97, 98]}", "{ok, {x, [1, 2]}}", false);
	expect(t, copy, "{delete, a}", "ok", true);
	expect(t, copy, "keys", "[\"ab\"]", false);
	t->stop(copy);
	free(copy);

	/* A map given with keys in another encoding still holds one key each. */
	void *other = calloc(1, t->state_size);
	ei_x_buff m; /* #{[97, 98] => 1}: ei_x_format has no map syntax */
	sn_x_new(&m);
	ei_x_encode_map_header(&m, 1);
	ei_x_encode_list_header(&m, 2);
	ei_x_encode_long(&m, 97);
	ei_x_encode_long(&m, 98);
	ei_x_encode_empty_list(&m);
	ei_x_encode_long(&m, 1);
	char *exact = sn_dup_exact(m.buff, (size_t)m.index);
	cr_assert_eq(t->decode_state(other, exact, (size_t)m.index), 0);
	free(exact);
	ei_x_free(&m);
	expect(t, other, "{get, \"ab\"}", "{ok, 1}", false);
	cr_assert_eq(decode_fmt(t, other, "[a]"), -EPROTO, "not a map");
	t->stop(other);
	free(other);
	t->stop(kv);
	free(kv);
}

Test(entity_state, echo_keeps_no_state)
{
	const struct entity_type *t = builtin("echo");
	cr_assert_null(entity_type_invalid(t));
	cr_assert_not(entity_type_keeps_state(t));
	char *got;
	enum entity_after a = send_msg(t, NULL, "{hi, 1}", &got);
	cr_assert_str_eq(got, "{hi, 1}");
	cr_assert_not(entity_after_changed(t, a));
	free(got);
}

static enum entity_after v1_handle(void *state, const char *msg, size_t len, ei_x_buff *reply)
{
	(void)state;
	term_x_append_raw(reply, msg, len);
	return ENTITY_CONTINUE | ENTITY_CHANGED; /* a v1 type's flag bits mean nothing */
}

/* A v1 plugin's struct ends at `stop`. Copied into a heap block of exactly
 * that size, any read of a v2 field is an AddressSanitizer report. */
Test(entity_state, a_v1_type_is_read_without_its_missing_fields)
{
	const struct entity_type full = {
		.api_version = ENTITY_API_VERSION_1, .name = "old", .handle = v1_handle};
	size_t v1_size = offsetof(struct entity_type, encode_state);
	const struct entity_type *v1 = (const struct entity_type *)sn_dup_exact(&full, v1_size);
	cr_assert_null(entity_type_invalid(v1));
	cr_assert_not(entity_type_keeps_state(v1));
	cr_assert_not(entity_after_changed(v1, ENTITY_CONTINUE | ENTITY_CHANGED));
	free((void *)v1);
}

static int enc(const void *state, ei_x_buff *out)
{
	(void)state;
	return ei_x_encode_atom(out, "s") < 0 ? -ENOMEM : 0;
}

static int dec(void *state, const char *term, size_t len)
{
	(void)state;
	(void)term;
	(void)len;
	return 0;
}

Test(entity_state, what_makes_a_type_invalid)
{
	struct entity_type t = {.api_version = 2, .name = "ok_1", .handle = v1_handle};
	cr_assert_null(entity_type_invalid(&t), "v2 without state callbacks");
	t.encode_state = enc;
	cr_assert_not_null(entity_type_invalid(&t), "encode without decode");
	t.decode_state = dec;
	cr_assert_null(entity_type_invalid(&t));
	cr_assert(entity_type_keeps_state(&t));
	t.encode_state = NULL;
	cr_assert_not_null(entity_type_invalid(&t), "decode without encode");
	t.decode_state = NULL;
	t.api_version = 0;
	cr_assert_not_null(entity_type_invalid(&t));
	t.api_version = 3;
	cr_assert_not_null(entity_type_invalid(&t), "a version this node does not know");
	t.api_version = 2;
	t.name = "Bad";
	cr_assert_not_null(entity_type_invalid(&t));
	t.name = "ok";
	t.handle = NULL;
	cr_assert_not_null(entity_type_invalid(&t));
	cr_assert_not_null(entity_type_invalid(NULL));
}
