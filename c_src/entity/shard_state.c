/* shard_state.c — see shard_state.h. */
#include "entity/shard_state.h"

#include <errno.h>
#include <stdbool.h>

#include "base/byteorder.h"
#include "entity/entity_type.h"
#include "etf/entity_id.h"
#include "etf/term.h"

int shard_state_export(const struct shard *s, struct shard_state_cursor *cur, size_t max_bytes, ei_x_buff *out,
		       size_t *count)
{
	*count = 0;
	int start = out->index;
	const struct entity_table *t = &s->entities;
	bool keeps = entity_type_keeps_state(s->type);
	/* LIST_EXT with its length patched in at the end: the count is known
	 * only then. A chunk of no entity is NIL_EXT instead. */
	const char head[5] = {ERL_LIST_EXT, 0, 0, 0, 0};
	if (ei_x_append_buf(out, head, sizeof head) < 0)
		return -ENOMEM;
	size_t slot = cur->slot;
	uint32_t n = 0;
	for (; keeps && slot < t->cap && (n == 0 || (size_t)(out->index - start) < max_bytes); slot++) {
		struct entity *e = entity_table_at(t, slot);
		if (e == NULL)
			continue;
		if (ei_x_encode_tuple_header(out, 2) < 0 || term_x_append_raw(out, entity_id(e), e->id_len) != 0 ||
		    s->type->encode_state(entity_state(e), out) != 0) {
			out->index = start;
			return -ENOMEM;
		}
		n++;
	}
	if (n == 0) {
		out->index = start;
		if (ei_x_encode_empty_list(out) < 0)
			return -ENOMEM;
	} else {
		be32_write(out->buff + start + 1, n);
		if (ei_x_encode_empty_list(out) < 0) {
			out->index = start;
			return -ENOMEM;
		}
	}
	/* Whether anything is left past `slot`: only live entities count. */
	size_t next = slot;
	while (keeps && next < t->cap && entity_table_at(t, next) == NULL)
		next++;
	cur->slot = next;
	*count = n;
	return keeps && next < t->cap ? 1 : 0;
}

int shard_state_each(const char *chunk, size_t len, shard_state_each_fn fn, void *arg)
{
	int ii = 0, n;
	if (ei_decode_list_header(chunk, &ii, &n) < 0)
		return -EPROTO;
	size_t i = (size_t)ii;
	ei_x_buff id;
	if (ei_x_new(&id) < 0)
		return -ENOMEM;
	int rc = 0;
	for (int k = 0; k < n && rc == 0; k++) {
		if (term_get_tuple(chunk, &i) != 2) {
			rc = -EPROTO;
			break;
		}
		const char *raw_id = chunk + i;
		term_skip(chunk, &i);
		size_t raw_id_len = (size_t)(chunk + i - raw_id);
		const char *state = chunk + i;
		term_skip(chunk, &i);
		size_t state_len = (size_t)(chunk + i - state);
		id.index = 0;
		/* Ids travel as terms; tables and stores key on canonical bytes. */
		if (entity_id_canonical(raw_id, raw_id_len, &id) != 0) {
			rc = -EPROTO;
			break;
		}
		rc = fn(arg, id.buff, (size_t)id.index, state, state_len);
	}
	if (rc == 0 && n > 0) {
		/* The tail of a proper list. */
		int jj = (int)i, tail;
		if (ei_decode_list_header(chunk, &jj, &tail) < 0 || tail != 0)
			rc = -EPROTO;
		else
			i = (size_t)jj;
	}
	if (rc == 0 && i != len)
		rc = -EPROTO;
	ei_x_free(&id);
	return rc;
}

struct import_ctx {
	struct shard *s;
	uint32_t now_ms;
	size_t *restored;
};

static int import_one(void *arg, const char *id, size_t id_len, const char *state, size_t state_len)
{
	struct import_ctx *c = arg;
	int rc = shard_restore_entity(c->s, id, id_len, state, state_len, c->now_ms);
	if (rc > 0) {
		(*c->restored)++;
		rc = 0;
	}
	return rc;
}

int shard_state_import(struct shard *s, const char *chunk, size_t len, uint32_t now_ms, size_t *restored)
{
	*restored = 0;
	if (!entity_type_keeps_state(s->type))
		return -EINVAL;
	struct import_ctx c = {s, now_ms, restored};
	return shard_state_each(chunk, len, import_one, &c);
}
