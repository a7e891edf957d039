/*
 * entity_builtin.c — the built-in entity types (docs/contract.md, "Entities (one node)");
 * kv's code is in entity_kv.c:
 *
 *   counter  incr | decr | {incr, N} -> the new value; get -> the value
 *   kv       {put, K, V} -> ok; {get, K} -> {ok, V} | {error, not_found};
 *            {delete, K} -> ok; keys -> [K]
 *   echo     Msg -> Msg
 *
 * counter keeps its state (API v2: the integer, of any size); echo has none.
 */
#include "entity/entity_builtin.h"
#include "entity/entity.h"
#include "entity/entity_kv.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "etf/term.h"

/* ---- counter ---- */

/* The value is a BEAM integer: it never wraps, past 2^63 it is a bignum
 * (entity_int, entity.h), and {incr, N} takes any integer. */
static enum entity_after counter_handle(void *state, const char *msg, size_t len, ei_x_buff *reply)
{
	struct entity_int *value = state;
	size_t i = 0;
	int rc = 0;
	bool changed = true;
	if (term_is_atom(msg, 0, "incr")) {
		rc = entity_int_add_i64(value, 1);
	} else if (term_is_atom(msg, 0, "decr")) {
		rc = entity_int_add_i64(value, -1);
	} else if (term_is_atom(msg, 0, "get")) {
		changed = false;
	} else if (term_get_tuple(msg, &i) == 2 && term_is_atom(msg, i, "incr")) {
		term_skip(msg, &i);
		struct entity_int delta = {0};
		size_t at = i;
		if (entity_int_decode(msg, &at, &delta) != 0 || at != len) {
			entity_int_free(&delta);
			entity_reply_unknown(reply, msg, len);
			return ENTITY_CONTINUE;
		}
		int64_t d;
		changed = !(entity_int_get_i64(&delta, &d) && d == 0);
		rc = entity_int_add(value, &delta);
		entity_int_free(&delta);
	} else {
		entity_reply_unknown(reply, msg, len);
		return ENTITY_CONTINUE;
	}
	if (rc != 0) {
		term_x_error_atom(reply, "enomem");
		return ENTITY_CONTINUE;
	}
	entity_int_encode(reply, value);
	return changed ? ENTITY_CONTINUE | ENTITY_CHANGED : ENTITY_CONTINUE;
}

/* The state as a term: the value, an integer. */
static int counter_encode_state(const void *state, ei_x_buff *out)
{
	return entity_int_encode(out, state);
}

static int counter_decode_state(void *state, const char *term, size_t len)
{
	size_t i = 0;
	struct entity_int *value = state, fresh = {0};
	int rc = entity_int_decode(term, &i, &fresh);
	if (rc == 0 && i != len) {
		entity_int_free(&fresh);
		rc = -EPROTO;
	}
	if (rc == 0) {
		entity_int_free(value);
		*value = fresh;
	}
	return rc;
}

static void counter_stop(void *state)
{
	entity_int_free(state);
}

static const struct entity_type counter_type = {
	.api_version = ENTITY_API_VERSION,
	.name = "counter",
	.state_size = sizeof(struct entity_int),
	.handle = counter_handle,
	.stop = counter_stop,
	.encode_state = counter_encode_state,
	.decode_state = counter_decode_state,
};

/* ---- echo ---- */

static enum entity_after echo_handle(void *state, const char *msg, size_t len, ei_x_buff *reply)
{
	(void)state;
	term_x_append_raw(reply, msg, len);
	return ENTITY_CONTINUE;
}

static const struct entity_type echo_type = {
	.api_version = ENTITY_API_VERSION,
	.name = "echo",
	.state_size = 0,
	.handle = echo_handle,
};

static const struct entity_type *const builtin[] = {&counter_type, &entity_kv_type, &echo_type, NULL};

const struct entity_type *const *entity_builtin_types(void) { return builtin; }
