/*
 * entity_builtin.c — the built-in entity types (docs/contract.md, "Entities (one node)");
 * kv's code is in entity_kv.c:
 *
 *   counter  incr | decr | {incr, N} -> the new value; get -> the value
 *   kv       {put, K, V} -> ok; {get, K} -> {ok, V} | {error, not_found};
 *            {delete, K} -> ok; keys -> [K]
 *   echo     Msg -> Msg
 *
 * counter keeps its state (API v2: the integer); echo has none.
 */
#include "entity/entity_builtin.h"
#include "entity/entity.h"
#include "entity/entity_kv.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "etf/term.h"

/* ---- counter ---- */

static enum entity_after counter_handle(void *state, const char *msg, size_t len, ei_x_buff *reply)
{
	long long *value = state;
	size_t i = 0;
	long long delta = 0;
	bool known = true;
	if (term_is_atom(msg, 0, "incr")) {
		delta = 1;
	} else if (term_is_atom(msg, 0, "decr")) {
		delta = -1;
	} else if (term_is_atom(msg, 0, "get")) {
		delta = 0;
	} else if (term_get_tuple(msg, &i) == 2 && term_is_atom(msg, i, "incr")) {
		term_skip(msg, &i);
		int ii = (int)i;
		if (ei_decode_longlong(msg, &ii, &delta) < 0 || (size_t)ii != len)
			known = false;
	} else {
		known = false;
	}
	if (!known) {
		entity_reply_unknown(reply, msg, len);
		return ENTITY_CONTINUE;
	}
	/* Wrap like a 64-bit machine word rather than overflow (undefined in C). */
	*value = (long long)((unsigned long long)*value + (unsigned long long)delta);
	ei_x_encode_longlong(reply, *value);
	return delta != 0 ? ENTITY_CONTINUE | ENTITY_CHANGED : ENTITY_CONTINUE;
}

/* The state as a term: the value, an integer. */
static int counter_encode_state(const void *state, ei_x_buff *out)
{
	return ei_x_encode_longlong(out, *(const long long *)state) < 0 ? -ENOMEM : 0;
}

static int counter_decode_state(void *state, const char *term, size_t len)
{
	int i = 0;
	long long value;
	if (ei_decode_longlong(term, &i, &value) < 0 || (size_t)i != len)
		return -EPROTO;
	*(long long *)state = value;
	return 0;
}

static const struct entity_type counter_type = {
	.api_version = ENTITY_API_VERSION,
	.name = "counter",
	.state_size = sizeof(long long),
	.handle = counter_handle,
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
