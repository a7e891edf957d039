/* replica_msg.c — see replica_msg.h. */
#include "replication/replica_msg.h"

#include <errno.h>
#include <string.h>

#include "base/byteorder.h"
#include "etf/entity_id.h"
#include "etf/shardnode_msg.h"
#include "etf/term.h"
#include "etf/term_encode.h"
#include "protocol/node_name.h"

static const char *const kind_names[] = {
	[RMSG_SET] = "replica_set",
	[RMSG_REPLICATE] = "replicate",
	[RMSG_REPLICATED] = "replicated",
	[RMSG_FILL] = "replica_fill",
	[RMSG_FILL_ACK] = "replica_fill_ack",
	[RMSG_REFUSED] = "replica_refused",
	[RMSG_FILLED] = "replica_filled",
	[RMSG_HELD] = "replicas_held",
};

static bool get_u64(const char *t, size_t *i, uint64_t *v)
{
	int ii = (int)*i;
	unsigned long long u;
	if (ei_decode_ulonglong(t, &ii, &u) < 0)
		return false;
	*v = u;
	*i = (size_t)ii;
	return true;
}

static bool get_u32(const char *t, size_t *i, uint32_t *v)
{
	uint64_t u;
	if (!get_u64(t, i, &u) || u > UINT32_MAX)
		return false;
	*v = (uint32_t)u;
	return true;
}

static bool get_bool(const char *t, size_t *i, bool *v)
{
	if (term_is_atom(t, *i, "true"))
		*v = true;
	else if (term_is_atom(t, *i, "false"))
		*v = false;
	else
		return false;
	term_skip(t, i);
	return true;
}

/* A list's elements: *n of them from *i; false if it is no list. */
static bool list_head(const char *t, size_t *i, int *n)
{
	int ii = (int)*i;
	if (ei_decode_list_header(t, &ii, n) < 0)
		return false;
	*i = (size_t)ii;
	return true;
}

/* After a non-empty list's elements: its [] tail. */
static bool list_tail(const char *t, size_t *i, int n)
{
	if (n == 0)
		return true;
	int ii = (int)*i, tail;
	if (ei_decode_list_header(t, &ii, &tail) < 0 || tail != 0)
		return false;
	*i = (size_t)ii;
	return true;
}

/* ---- the walks ---- */

int replica_msg_each_member(const struct replica_msg *m, replica_member_fn fn, void *arg)
{
	const char *t = m->list;
	size_t i = 0;
	int n;
	if (!list_head(t, &i, &n))
		return -EPROTO;
	for (int k = 0; k < n; k++) {
		erlang_pid pid;
		bool complete;
		if (term_get_tuple(t, &i) != 2 || term_get_pid(t, &i, &pid) != 0 || !get_bool(t, &i, &complete))
			return -EPROTO;
		int rc = fn ? fn(arg, &pid, complete) : 0;
		if (rc)
			return rc;
	}
	return list_tail(t, &i, n) && i == m->list_len ? 0 : -EPROTO;
}

int replica_msg_each_write(const struct replica_msg *m, replica_write_fn fn, void *arg)
{
	const char *t = m->list;
	size_t i = 0;
	int n;
	if (!list_head(t, &i, &n))
		return -EPROTO;
	ei_x_buff id;
	if (ei_x_new(&id) < 0)
		return -ENOMEM;
	int rc = 0;
	for (int k = 0; k < n && rc == 0; k++) {
		uint32_t shard;
		uint64_t epoch, seq;
		if (term_get_tuple(t, &i) != 5 || !get_u32(t, &i, &shard) || !get_u64(t, &i, &epoch) ||
		    !get_u64(t, &i, &seq)) {
			rc = -EPROTO;
			break;
		}
		const char *raw_id = t + i;
		term_skip(t, &i);
		id.index = 0;
		if (entity_id_canonical(raw_id, (size_t)(t + i - raw_id), &id) != 0) {
			rc = -EPROTO;
			break;
		}
		const char *state = NULL;
		size_t state_len = 0;
		if (term_is_atom(t, i, "deleted")) {
			term_skip(t, &i);
		} else if (term_get_tuple(t, &i) == 1) {
			state = t + i;
			term_skip(t, &i);
			state_len = (size_t)(t + i - state);
		} else {
			rc = -EPROTO;
			break;
		}
		if (fn)
			rc = fn(arg, shard, epoch, seq, id.buff, (size_t)id.index, state, state_len);
	}
	if (rc == 0 && !(list_tail(t, &i, n) && i == m->list_len))
		rc = -EPROTO;
	ei_x_free(&id);
	return rc;
}

int replica_msg_each_held(const struct replica_msg *m, replica_held_fn fn, void *arg)
{
	const char *t = m->list;
	size_t i = 0;
	int n;
	if (!list_head(t, &i, &n))
		return -EPROTO;
	for (int k = 0; k < n; k++) {
		uint32_t shard;
		uint64_t epoch;
		enum replica_role_held role;
		long arity = term_get_tuple(t, &i);
		if ((arity != 3 && arity != 4) || !get_u32(t, &i, &shard) || !get_u64(t, &i, &epoch))
			return -EPROTO;
		if (term_is_atom(t, i, "home"))
			role = REPLICA_HELD_HOME;
		else if (term_is_atom(t, i, "complete"))
			role = REPLICA_HELD_COMPLETE;
		else if (term_is_atom(t, i, "filling"))
			role = REPLICA_HELD_FILLING;
		else if (term_is_atom(t, i, "none"))
			role = REPLICA_HELD_NONE;
		else
			return -EPROTO;
		term_skip(t, &i);
		char set_home[NODE_NAME_BUF];
		if (arity == 4 && ((role != REPLICA_HELD_FILLING && role != REPLICA_HELD_NONE) ||
				   node_name_decode(t, &i, set_home) != 0))
			return -EPROTO; /* only a copy that is not the set's names its home */
		int rc = fn ? fn(arg, shard, epoch, role, arity == 4 ? set_home : NULL) : 0;
		if (rc)
			return rc;
	}
	return list_tail(t, &i, n) && i == m->list_len ? 0 : -EPROTO;
}

/* ---- decoding ---- */

static void take_list(const char *t, size_t *i, struct replica_msg *out)
{
	out->list = t + *i;
	term_skip(t, i);
	out->list_len = (size_t)(t + *i - out->list);
}

int replica_msg_decode(const char *t, size_t len, struct replica_msg *out)
{
	size_t i;
	long arity;
	if (!shardnode_msg_head(t, &i, &arity) || arity < 2)
		return 0;
	size_t k;
	for (k = 0; k < sizeof kind_names / sizeof kind_names[0]; k++)
		if (term_is_atom(t, i, kind_names[k]))
			break;
	if (k == sizeof kind_names / sizeof kind_names[0])
		return 0;
	term_skip(t, &i);
	memset(out, 0, sizeof *out);
	out->kind = (enum replica_msg_kind)k;
	bool ok;
	int rc = 0;
	switch (out->kind) {
	case RMSG_SET:
		ok = arity == 6 && get_u32(t, &i, &out->shard) && get_u64(t, &i, &out->epoch) &&
		     term_get_pid(t, &i, &out->pid) == 0;
		if (ok) {
			take_list(t, &i, out);
			rc = replica_msg_each_member(out, NULL, NULL);
		}
		break;
	case RMSG_REPLICATE:
		ok = arity == 4 && term_get_pid(t, &i, &out->pid) == 0;
		if (ok) {
			take_list(t, &i, out);
			rc = replica_msg_each_write(out, NULL, NULL);
		}
		break;
	case RMSG_REPLICATED:
		ok = arity == 4 && get_u64(t, &i, &out->seq) && term_get_pid(t, &i, &out->pid) == 0;
		break;
	case RMSG_FILL_ACK:
		ok = arity == 5 && get_u32(t, &i, &out->shard) && get_u64(t, &i, &out->seq) &&
		     term_get_pid(t, &i, &out->pid) == 0;
		break;
	case RMSG_REFUSED:
		ok = arity == 5 && get_u32(t, &i, &out->shard) && get_u64(t, &i, &out->epoch) &&
		     term_get_pid(t, &i, &out->pid) == 0;
		break;
	case RMSG_FILL: {
		ok = arity == 8 && get_u32(t, &i, &out->shard) && get_u64(t, &i, &out->epoch) &&
		     get_u64(t, &i, &out->seq) && get_bool(t, &i, &out->last) && term_get_pid(t, &i, &out->pid) == 0;
		int ii = (int)i, type, size;
		ok = ok && ei_get_type(t, &ii, &type, &size) == 0 && (type == ERL_LIST_EXT || type == ERL_NIL_EXT);
		if (ok)
			take_list(t, &i, out); /* its records are shard_state_each's to judge */
		break;
	}
	case RMSG_FILLED:
		ok = arity == 4 && get_u32(t, &i, &out->shard) && term_get_pid(t, &i, &out->pid) == 0;
		break;
	case RMSG_HELD:
		ok = arity == 4 && term_get_pid(t, &i, &out->pid) == 0;
		if (ok) {
			take_list(t, &i, out);
			rc = replica_msg_each_held(out, NULL, NULL);
		}
		break;
	default:
		ok = false;
	}
	return ok && rc == 0 && i == len ? 1 : -EPROTO;
}

/* ---- encoding ---- */

static int begin(ei_x_buff *x, int arity, enum replica_msg_kind kind)
{
	if (ei_x_encode_version(x) < 0)
		return -ENOMEM;
	return shardnode_msg_begin(x, arity, kind_names[kind]);
}

int replica_msg_encode_set(ei_x_buff *x, uint32_t shard, uint64_t epoch, const erlang_pid *home,
			   const erlang_pid *const *replicas, const bool *complete, size_t n)
{
	if (begin(x, 6, RMSG_SET) || term_x_encode_uint(x, shard) < 0 || term_x_encode_uint(x, epoch) < 0 ||
	    ei_x_encode_pid(x, home) < 0)
		return -ENOMEM;
	if (n > 0 && ei_x_encode_list_header(x, (long)n) < 0)
		return -ENOMEM;
	for (size_t k = 0; k < n; k++)
		if (ei_x_encode_tuple_header(x, 2) < 0 || ei_x_encode_pid(x, replicas[k]) < 0 ||
		    term_x_encode_atom(x, complete[k] ? "true" : "false") < 0)
			return -ENOMEM;
	return ei_x_encode_empty_list(x) < 0 ? -ENOMEM : 0;
}

int replica_msg_writes_begin(struct replica_writes *w, ei_x_buff *x, const erlang_pid *home)
{
	*w = (struct replica_writes){0};
	if (begin(x, 4, RMSG_REPLICATE) || ei_x_encode_pid(x, home) < 0)
		return -ENOMEM;
	/* LIST_EXT, its length patched in by _end: known only then. */
	const char head[5] = {ERL_LIST_EXT, 0, 0, 0, 0};
	w->list_at = x->index;
	return ei_x_append_buf(x, head, sizeof head) < 0 ? -ENOMEM : 0;
}

int replica_msg_writes_add(struct replica_writes *w, ei_x_buff *x, uint32_t shard, uint64_t epoch, uint64_t seq,
			   const char *id, size_t id_len, const char *state, size_t state_len)
{
	if (ei_x_encode_tuple_header(x, 5) < 0 || term_x_encode_uint(x, shard) < 0 ||
	    term_x_encode_uint(x, epoch) < 0 || term_x_encode_uint(x, seq) < 0 ||
	    term_x_append_raw(x, id, id_len) != 0)
		return -ENOMEM;
	if (state == NULL) {
		if (term_x_encode_atom(x, "deleted") < 0)
			return -ENOMEM;
	} else if (state_len < 1 || ei_x_encode_tuple_header(x, 1) < 0 ||
		   term_x_append_raw(x, state + 1, state_len - 1) != 0) { /* without its version byte */
		return -ENOMEM;
	}
	w->n++;
	return 0;
}

int replica_msg_writes_end(struct replica_writes *w, ei_x_buff *x)
{
	if (w->n == 0) {
		x->index = w->list_at; /* [] instead */
		return ei_x_encode_empty_list(x) < 0 ? -ENOMEM : 0;
	}
	be32_write(x->buff + w->list_at + 1, w->n);
	return ei_x_encode_empty_list(x) < 0 ? -ENOMEM : 0;
}

int replica_msg_encode_reply(ei_x_buff *x, enum replica_msg_kind kind, uint32_t shard, uint64_t value,
			     const erlang_pid *from)
{
	if (begin(x, 5, kind) || term_x_encode_uint(x, shard) < 0 || term_x_encode_uint(x, value) < 0 ||
	    ei_x_encode_pid(x, from) < 0)
		return -ENOMEM;
	return 0;
}

int replica_msg_encode_fill(ei_x_buff *x, uint32_t shard, uint64_t epoch, uint32_t chunk, bool last,
			    const erlang_pid *home, const char *records, size_t records_len)
{
	if (begin(x, 8, RMSG_FILL) || term_x_encode_uint(x, shard) < 0 || term_x_encode_uint(x, epoch) < 0 ||
	    term_x_encode_uint(x, chunk) < 0 || term_x_encode_atom(x, last ? "true" : "false") < 0 ||
	    ei_x_encode_pid(x, home) < 0)
		return -ENOMEM;
	return term_x_append_raw(x, records, records_len);
}

int replica_msg_encode_replicated(ei_x_buff *x, uint64_t seq, const erlang_pid *replica)
{
	if (begin(x, 4, RMSG_REPLICATED) || term_x_encode_uint(x, seq) < 0 || ei_x_encode_pid(x, replica) < 0)
		return -ENOMEM;
	return 0;
}

int replica_msg_encode_filled(ei_x_buff *x, uint32_t shard, const erlang_pid *replica)
{
	if (begin(x, 4, RMSG_FILLED) || term_x_encode_uint(x, shard) < 0 || ei_x_encode_pid(x, replica) < 0)
		return -ENOMEM;
	return 0;
}

int replica_msg_encode_held(ei_x_buff *x, const erlang_pid *region, const uint32_t *shards, const uint64_t *epochs,
			    const enum replica_role_held *roles, const char *const *set_homes, size_t n)
{
	static const char *const role_names[] = {"home", "complete", "filling", "none"};
	if (begin(x, 4, RMSG_HELD) || ei_x_encode_pid(x, region) < 0)
		return -ENOMEM;
	if (n > 0 && ei_x_encode_list_header(x, (long)n) < 0)
		return -ENOMEM;
	for (size_t k = 0; k < n; k++) {
		const char *set_home = set_homes != NULL &&
					       (roles[k] == REPLICA_HELD_FILLING || roles[k] == REPLICA_HELD_NONE)
				       ? set_homes[k]
				       : NULL;
		if (ei_x_encode_tuple_header(x, set_home ? 4 : 3) < 0 || term_x_encode_uint(x, shards[k]) < 0 ||
		    term_x_encode_uint(x, epochs[k]) < 0 || term_x_encode_atom(x, role_names[roles[k]]) < 0 ||
		    (set_home && term_x_encode_atom(x, set_home) < 0))
			return -ENOMEM;
	}
	return ei_x_encode_empty_list(x) < 0 ? -ENOMEM : 0;
}
