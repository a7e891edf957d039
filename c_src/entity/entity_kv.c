/*
 * entity_kv.c — the built-in kv type (docs/contract.md, "Entities (one node)"):
 *
 *   {put, K, V} -> ok; {get, K} -> {ok, V} | {error, not_found};
 *   {delete, K} -> ok; keys -> [K]
 *
 * Keys are compared by their canonical encoding (etf/entity_id.h), so equal
 * terms are one key however a peer encoded them. Its state (entity API v2)
 * is the map #{K => V}.
 */
#include "entity/entity_kv.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "etf/entity_id.h"
#include "etf/term.h"
#include "etf/term_encode.h"

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

/* The key as kv compares it, into key (empty): its canonical encoding, or
 * the bytes as sent for a key that has none (pids and references may be
 * keys). */
static void canonical_key(const char *raw, size_t len, ei_x_buff *key)
{
	if (entity_id_canonical(raw, len, key) != 0) {
		key->index = 0;
		term_x_append_raw(key, raw, len);
	}
}

/* Sets `key` (canonical bytes) to a copy of `value` (raw term), adding the
 * pair if the key is new. Returns 0 or -ENOMEM (kv unchanged). */
static int kv_put(struct kv_state *kv, const char *key, size_t key_len, const char *value, size_t value_len)
{
	char *copy = dup_bytes(value, value_len);
	if (copy == NULL)
		return -ENOMEM;
	struct kv_pair *pair = kv_find(kv, key, key_len);
	if (pair != NULL) {
		free(pair->value);
		pair->value = copy;
		pair->value_len = value_len;
		return 0;
	}
	if (kv->n == kv->cap) {
		uint32_t cap = kv->cap ? kv->cap * 2 : 2;
		struct kv_pair *np = realloc(kv->pairs, cap * sizeof *np);
		if (np == NULL) {
			free(copy);
			return -ENOMEM;
		}
		kv->pairs = np;
		kv->cap = cap;
	}
	char *kcopy = dup_bytes(key, key_len);
	if (kcopy == NULL) {
		free(copy);
		return -ENOMEM;
	}
	kv->pairs[kv->n++] = (struct kv_pair){kcopy, key_len, copy, value_len};
	return 0;
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
	canonical_key(key_raw, key_raw_len, &key);
	struct kv_pair *pair = kv_find(kv, key.buff, (size_t)key.index);
	int after = ENTITY_CONTINUE;

	if (arity == 3 && strcmp(op, "put") == 0) {
		const char *val;
		size_t val_len;
		raw_term(msg, &i, &val, &val_len);
		if (kv_put(kv, key.buff, (size_t)key.index, val, val_len) != 0) {
			term_x_error_atom(reply, "enomem");
		} else {
			term_x_encode_atom(reply, "ok");
			after |= ENTITY_CHANGED;
		}
	} else if (arity == 2 && strcmp(op, "get") == 0) {
		if (pair != NULL) {
			ei_x_encode_tuple_header(reply, 2);
			term_x_encode_atom(reply, "ok");
			term_x_append_raw(reply, pair->value, pair->value_len);
		} else {
			term_x_error_atom(reply, "not_found");
		}
	} else if (arity == 2 && strcmp(op, "delete") == 0) {
		if (pair != NULL) {
			free(pair->key);
			free(pair->value);
			*pair = kv->pairs[--kv->n];
			after |= ENTITY_CHANGED;
		}
		term_x_encode_atom(reply, "ok");
	} else {
		entity_reply_unknown(reply, msg, len);
	}
	ei_x_free(&key);
	return (enum entity_after)after;
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

/* The state as a term: a map #{Key => Value}, keys in their canonical
 * encoding (equal to the keys as given, as terms). */
static int kv_encode_state(const void *state, ei_x_buff *out)
{
	const struct kv_state *kv = state;
	if (ei_x_encode_map_header(out, kv->n) < 0)
		return -ENOMEM;
	for (uint32_t k = 0; k < kv->n; k++)
		if (term_x_append_raw(out, kv->pairs[k].key, kv->pairs[k].key_len) != 0 ||
		    term_x_append_raw(out, kv->pairs[k].value, kv->pairs[k].value_len) != 0)
			return -ENOMEM;
	return 0;
}

static int kv_decode_state(void *state, const char *term, size_t len)
{
	struct kv_state *kv = state;
	int ii = 0, arity;
	if (ei_decode_map_header(term, &ii, &arity) < 0)
		return -EPROTO;
	size_t i = (size_t)ii;
	ei_x_buff key;
	if (ei_x_new(&key) < 0)
		return -ENOMEM;
	int rc = 0;
	for (int k = 0; k < arity && rc == 0; k++) {
		const char *kraw, *vraw;
		size_t klen, vlen;
		raw_term(term, &i, &kraw, &klen);
		raw_term(term, &i, &vraw, &vlen);
		key.index = 0;
		canonical_key(kraw, klen, &key);
		rc = kv_put(kv, key.buff, (size_t)key.index, vraw, vlen);
	}
	ei_x_free(&key);
	if (rc == 0 && i != len)
		rc = -EPROTO;
	return rc; /* on error, what was put is released by kv_stop */
}

const struct entity_type entity_kv_type = {
	.api_version = ENTITY_API_VERSION,
	.name = "kv",
	.state_size = sizeof(struct kv_state),
	.handle = kv_handle,
	.stop = kv_stop,
	.encode_state = kv_encode_state,
	.decode_state = kv_decode_state,
};
