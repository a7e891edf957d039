/*
 * entity_builtin.c — the built-in entity types (docs/contract.md, "Entities (one node)"):
 *
 *   counter  incr | decr | {incr, N} -> the new value; get -> the value
 *   kv       {put, K, V} -> ok; {get, K} -> {ok, V} | {error, not_found};
 *            {delete, K} -> ok; keys -> [K]
 *   echo     Msg -> Msg
 *
 * Keys of kv are compared by their canonical encoding (entity_id.h), so
 * equal terms are one key however a peer encoded them.
 */
#include "entity/entity_builtin.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "etf/entity_id.h"
#include "etf/term.h"

int entity_reply_unknown(ei_x_buff *reply, const char *msg, size_t msg_len)
{
	return term_x_error_tagged_raw(reply, "unknown_message", msg, msg_len);
}

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
	return ENTITY_CONTINUE;
}

static const struct entity_type counter_type = {
	.api_version = ENTITY_API_VERSION,
	.name = "counter",
	.state_size = sizeof(long long),
	.handle = counter_handle,
};

/* ---- kv ---- */

/* A small array of pairs: entities usually hold few keys, and a scan of a
 * few contiguous entries beats a hash table in both memory and time. */
struct kv_pair {
	char *key; /* canonical encoding; owned */
	size_t key_len;
	char *value; /* raw encoded term; owned */
	size_t value_len;
};

struct kv_state {
	struct kv_pair *pairs;
	uint32_t n, cap;
};

static struct kv_pair *kv_find(struct kv_state *kv, const char *key, size_t key_len)
{
	for (uint32_t k = 0; k < kv->n; k++)
		if (kv->pairs[k].key_len == key_len && memcmp(kv->pairs[k].key, key, key_len) == 0)
			return &kv->pairs[k];
	return NULL;
}

static char *dup_bytes(const char *p, size_t n)
{
	char *d = malloc(n ? n : 1);
	if (d)
		memcpy(d, p, n);
	return d;
}

/* Raw bytes of the term at msg[*i], advancing *i. */
static void raw_term(const char *msg, size_t *i, const char **p, size_t *n)
{
	*p = msg + *i;
	term_skip(msg, i);
	*n = (size_t)(msg + *i - *p);
}

static enum entity_after kv_handle(void *state, const char *msg, size_t len, ei_x_buff *reply)
{
	struct kv_state *kv = state;
	size_t i = 0;
	char op[TERM_ATOM_BUF];
	long arity = term_get_tuple(msg, &i);
	if (arity < 0) {
		if (term_is_atom(msg, 0, "keys")) {
			if (kv->n > 0)
				ei_x_encode_list_header(reply, kv->n);
			for (uint32_t k = 0; k < kv->n; k++)
				term_x_append_raw(reply, kv->pairs[k].key, kv->pairs[k].key_len);
			ei_x_encode_empty_list(reply);
		} else {
			entity_reply_unknown(reply, msg, len);
		}
		return ENTITY_CONTINUE;
	}
	if ((arity != 2 && arity != 3) || term_get_atom(msg, &i, op)) {
		entity_reply_unknown(reply, msg, len);
		return ENTITY_CONTINUE;
	}
	const char *key_raw;
	size_t key_raw_len;
	raw_term(msg, &i, &key_raw, &key_raw_len);
	ei_x_buff key;
	ei_x_new(&key);
	int rc = entity_id_canonical(key_raw, key_raw_len, &key);
	if (rc) {
		/* Keys may be any term, pids and refs included: store those as sent. */
		key.index = 0;
		term_x_append_raw(&key, key_raw, key_raw_len);
	}
	struct kv_pair *pair = kv_find(kv, key.buff, (size_t)key.index);

	if (arity == 3 && strcmp(op, "put") == 0) {
		const char *val;
		size_t val_len;
		raw_term(msg, &i, &val, &val_len);
		char *copy = dup_bytes(val, val_len);
		if (copy == NULL) {
			term_x_error_atom(reply, "enomem");
		} else if (pair != NULL) {
			free(pair->value);
			pair->value = copy;
			pair->value_len = val_len;
			ei_x_encode_atom(reply, "ok");
		} else {
			if (kv->n == kv->cap) {
				uint32_t cap = kv->cap ? kv->cap * 2 : 2;
				struct kv_pair *np = realloc(kv->pairs, cap * sizeof *np);
				if (np == NULL) {
					free(copy);
					term_x_error_atom(reply, "enomem");
					ei_x_free(&key);
					return ENTITY_CONTINUE;
				}
				kv->pairs = np;
				kv->cap = cap;
			}
			char *kcopy = dup_bytes(key.buff, (size_t)key.index);
			if (kcopy == NULL) {
				free(copy);
				term_x_error_atom(reply, "enomem");
			} else {
				kv->pairs[kv->n++] = (struct kv_pair){kcopy, (size_t)key.index, copy, val_len};
				ei_x_encode_atom(reply, "ok");
			}
		}
	} else if (arity == 2 && strcmp(op, "get") == 0) {
		if (pair != NULL) {
			ei_x_encode_tuple_header(reply, 2);
			ei_x_encode_atom(reply, "ok");
			term_x_append_raw(reply, pair->value, pair->value_len);
		} else {
			term_x_error_atom(reply, "not_found");
		}
	} else if (arity == 2 && strcmp(op, "delete") == 0) {
		if (pair != NULL) {
			free(pair->key);
			free(pair->value);
			*pair = kv->pairs[--kv->n];
		}
		ei_x_encode_atom(reply, "ok");
	} else {
		entity_reply_unknown(reply, msg, len);
	}
	ei_x_free(&key);
	return ENTITY_CONTINUE;
}

static void kv_stop(void *state)
{
	struct kv_state *kv = state;
	for (uint32_t k = 0; k < kv->n; k++) {
		free(kv->pairs[k].key);
		free(kv->pairs[k].value);
	}
	free(kv->pairs);
}

static const struct entity_type kv_type = {
	.api_version = ENTITY_API_VERSION,
	.name = "kv",
	.state_size = sizeof(struct kv_state),
	.handle = kv_handle,
	.stop = kv_stop,
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

static const struct entity_type *const builtin[] = {&counter_type, &kv_type, &echo_type, NULL};

const struct entity_type *const *entity_builtin_types(void) { return builtin; }
