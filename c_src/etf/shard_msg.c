/* shard_msg.c — see shard_msg.h. */
#include "etf/shard_msg.h"

#include <errno.h>
#include <string.h>

#include "etf/shardnode_msg.h"
#include "etf/term.h"
#include "etf/term_encode.h"

static const char *const kind_names[] = {
	[SMSG_REGISTER] = "register",
	[SMSG_REGISTERED] = "registered",
	[SMSG_GET_SHARD_HOME] = "get_shard_home",
	[SMSG_SHARD_HOME] = "shard_home",
	[SMSG_REGION_STOPPED] = "region_stopped",
	[SMSG_TELL] = "tell",
	[SMSG_HOSTING] = "hosting",
	[SMSG_BEGIN_HANDOFF] = "begin_handoff",
	[SMSG_HANDOFF_ACK] = "handoff_ack",
	[SMSG_HANDOFF] = "handoff",
	[SMSG_SHARD_STOPPED] = "shard_stopped",
	[SMSG_REGISTER_PROXY] = "register_proxy",
	[SMSG_GET_STATS] = "get_stats",
	[SMSG_STATS] = "stats",
	[SMSG_REGION_LEAVING] = "region_leaving",
	[SMSG_REGISTER_AGAIN] = "register_again",
	[SMSG_SHARD_STATE] = "shard_state",
	[SMSG_SHARD_STATE_ACK] = "shard_state_ack",
	[SMSG_REGION_BACK] = "region_back",
	[SMSG_SHARD_WAITS] = "shard_waits",
};

static bool get_pid(const char *t, size_t *i, erlang_pid *pid)
{
	return term_get_pid(t, i, pid) == 0;
}

static bool get_shard(const char *t, size_t *i, uint32_t *shard)
{
	/* Not term_get_long: it stops at INT32_MAX, and a shard id is any
	 * uint32_t (shard_msg_encode_shard writes the whole range). */
	int ii = (int)*i;
	long long v;
	if (ei_decode_longlong(t, &ii, &v) < 0 || v < 0 || v > (long long)UINT32_MAX)
		return false;
	*shard = (uint32_t)v;
	*i = (size_t)ii;
	return true;
}

/* A list of `*n` non-negative integers up to `max` (*n < 0: any count,
 * *n gets it) at t + *i: a proper list, [], or a string — how the BEAM
 * sends a list of integers below 256. With `out`, the values go there.
 * Advances *i past it. */
static bool get_ints(const char *t, size_t *i, int *n, uint64_t max, uint64_t *out)
{
	int ii = (int)*i, type, size;
	if (ei_get_type(t, &ii, &type, &size) < 0)
		return false;
	if (type == ERL_STRING_EXT) {
		if (*n >= 0 && size != *n)
			return false;
		const unsigned char *bytes = (const unsigned char *)t + *i + 3; /* tag, 16-bit length */
		for (int e = 0; e < size; e++) {
			if (bytes[e] > max)
				return false;
			if (out != NULL)
				out[e] = bytes[e];
		}
		*n = size;
		*i += 3 + (size_t)size;
		return true;
	}
	int count;
	if (ei_decode_list_header(t, &ii, &count) < 0 || (*n >= 0 && count != *n))
		return false;
	for (int e = 0; e < count; e++) {
		unsigned long long v;
		if (ei_decode_ulonglong(t, &ii, &v) < 0 || v > max)
			return false;
		if (out != NULL)
			out[e] = v;
	}
	if (count > 0) {
		int tail;
		if (ei_decode_list_header(t, &ii, &tail) < 0 || tail != 0)
			return false;
	}
	*n = count;
	*i = (size_t)ii;
	return true;
}

static void raw(const char *t, size_t *i, const char **p, size_t *n)
{
	*p = t + *i;
	term_skip(t, i);
	*n = (size_t)(t + *i - *p);
}

int shard_msg_decode(const char *t, size_t len, struct shard_msg *out)
{
	size_t i;
	long arity;
	if (!shardnode_msg_head(t, &i, &arity))
		return 0;
	char kind[TERM_ATOM_BUF];
	if (arity < 2 || term_get_atom(t, &i, kind))
		return -EPROTO;
	memset(out, 0, sizeof *out);
	size_t k;
	for (k = 0; k < sizeof kind_names / sizeof kind_names[0]; k++)
		if (strcmp(kind, kind_names[k]) == 0)
			break;
	switch (k) {
	case SMSG_REGISTER:
	case SMSG_REGION_LEAVING:
	case SMSG_REGION_BACK:
	case SMSG_REGISTER_PROXY:
	case SMSG_REGISTERED:
	case SMSG_REGISTER_AGAIN:
	case SMSG_REGION_STOPPED:
		if (arity != 3 || !get_pid(t, &i, &out->pid))
			return -EPROTO;
		out->has_pid = true;
		break;
	case SMSG_HANDOFF:
	case SMSG_SHARD_STATE_ACK:
		if (arity != 5 || !get_shard(t, &i, &out->shard) || !get_shard(t, &i, &out->count) ||
		    !get_pid(t, &i, &out->pid))
			return -EPROTO;
		out->has_pid = true;
		break;
	case SMSG_SHARD_STATE: {
		if (arity != 7 || !get_shard(t, &i, &out->shard) || !get_shard(t, &i, &out->count))
			return -EPROTO;
		if (term_is_atom(t, i, "true"))
			out->last = true;
		else if (!term_is_atom(t, i, "false"))
			return -EPROTO;
		term_skip(t, &i);
		if (!get_pid(t, &i, &out->pid))
			return -EPROTO;
		out->has_pid = true;
		/* A list: its elements are shard_state_import's to judge. */
		int ii = (int)i, type, size;
		if (ei_get_type(t, &ii, &type, &size) < 0 || (type != ERL_LIST_EXT && type != ERL_NIL_EXT))
			return -EPROTO;
		raw(t, &i, &out->msg, &out->msg_len);
		break;
	}
	case SMSG_STATS: {
		char node[TERM_ATOM_BUF];
		if (arity != 5 || !get_shard(t, &i, &out->shard))
			return -EPROTO;
		size_t at = i;
		if (term_get_atom(t, &i, node))
			return -EPROTO;
		out->id = t + at;
		out->id_len = i - at;
		int ii = (int)i, pairs;
		if (ei_decode_map_header(t, &ii, &pairs) < 0)
			return -EPROTO;
		raw(t, &i, &out->msg, &out->msg_len);
		break;
	}
	case SMSG_SHARD_HOME:
		/* 5 elements: the epoch of the claim, to the home itself
		 * (protocol 2, member_protocol.h). */
		if ((arity != 4 && arity != 5) || !get_shard(t, &i, &out->shard) || !get_pid(t, &i, &out->pid))
			return -EPROTO;
		out->has_pid = true;
		if (arity == 5) {
			int ii = (int)i;
			unsigned long long v;
			if (ei_decode_ulonglong(t, &ii, &v) < 0)
				return -EPROTO;
			out->epoch = v;
			i = (size_t)ii;
		}
		out->has_epoch = arity == 5;
		break;
	case SMSG_GET_STATS:
	case SMSG_GET_SHARD_HOME:
	case SMSG_SHARD_WAITS:
	case SMSG_BEGIN_HANDOFF:
	case SMSG_HANDOFF_ACK:
	case SMSG_SHARD_STOPPED:
		if (arity != 4 || !get_shard(t, &i, &out->shard) || !get_pid(t, &i, &out->pid))
			return -EPROTO;
		out->has_pid = true;
		break;
	case SMSG_HOSTING: {
		/* 5 elements: each shard's epoch, in a list as long as the
		 * shards' (protocol 2). The lists are checked now, so their
		 * readers need not. */
		if ((arity != 4 && arity != 5) || !get_pid(t, &i, &out->pid))
			return -EPROTO;
		out->has_pid = true;
		out->shards = t + i;
		int n = -1;
		if (!get_ints(t, &i, &n, UINT32_MAX, NULL))
			return -EPROTO;
		out->count = (uint32_t)n;
		if (arity == 5) {
			out->epochs = t + i;
			if (!get_ints(t, &i, &n, UINT64_MAX, NULL))
				return -EPROTO;
		}
		break;
	}
	case SMSG_TELL:
		if (arity != 5)
			return -EPROTO;
		if (term_is_atom(t, i, "undefined"))
			term_skip(t, &i);
		else if (get_pid(t, &i, &out->pid))
			out->has_pid = true;
		else
			return -EPROTO;
		raw(t, &i, &out->id, &out->id_len);
		raw(t, &i, &out->msg, &out->msg_len);
		break;
	default:
		return -EPROTO;
	}
	if (i != len)
		return -EPROTO;
	out->kind = (enum shard_msg_kind)k;
	return 1;
}

static int begin(ei_x_buff *x, int arity, enum shard_msg_kind kind)
{
	if (ei_x_encode_version(x) < 0)
		return -ENOMEM;
	return shardnode_msg_begin(x, arity, kind_names[kind]);
}

int shard_msg_encode_pid(ei_x_buff *x, enum shard_msg_kind kind, const erlang_pid *pid)
{
	if (begin(x, 3, kind) || ei_x_encode_pid(x, pid) < 0)
		return -ENOMEM;
	return 0;
}

int shard_msg_encode_shard(ei_x_buff *x, enum shard_msg_kind kind, uint32_t shard, const erlang_pid *pid)
{
	if (begin(x, 4, kind) || term_x_encode_uint(x, shard) < 0 || ei_x_encode_pid(x, pid) < 0)
		return -ENOMEM;
	return 0;
}

int shard_msg_encode_stats(ei_x_buff *x, uint32_t request, const char *node, const char *map, size_t map_len)
{
	if (begin(x, 5, SMSG_STATS) || term_x_encode_uint(x, request) < 0 || term_x_encode_atom(x, node) < 0)
		return -ENOMEM;
	return term_x_append_raw(x, map, map_len);
}

int shard_msg_encode_handoff(ei_x_buff *x, uint32_t shard, uint32_t acks, const erlang_pid *to)
{
	if (begin(x, 5, SMSG_HANDOFF) || term_x_encode_uint(x, shard) < 0 || term_x_encode_uint(x, acks) < 0 ||
	    ei_x_encode_pid(x, to) < 0)
		return -ENOMEM;
	return 0;
}

int shard_msg_encode_state_chunk(ei_x_buff *x, uint32_t shard, uint32_t seq, bool last, const erlang_pid *from,
				 const char *chunk, size_t chunk_len)
{
	if (begin(x, 7, SMSG_SHARD_STATE) || term_x_encode_uint(x, shard) < 0 || term_x_encode_uint(x, seq) < 0 ||
	    term_x_encode_atom(x, last ? "true" : "false") < 0 || ei_x_encode_pid(x, from) < 0)
		return -ENOMEM;
	return term_x_append_raw(x, chunk, chunk_len);
}

int shard_msg_encode_state_ack(ei_x_buff *x, uint32_t shard, uint32_t seq, const erlang_pid *region)
{
	if (begin(x, 5, SMSG_SHARD_STATE_ACK) || term_x_encode_uint(x, shard) < 0 || term_x_encode_uint(x, seq) < 0 ||
	    ei_x_encode_pid(x, region) < 0)
		return -ENOMEM;
	return 0;
}

int shard_msg_encode_hosting(ei_x_buff *x, const erlang_pid *region, const uint32_t *shards, const uint64_t *epochs,
			     size_t n)
{
	if (begin(x, epochs != NULL ? 5 : 4, SMSG_HOSTING) || ei_x_encode_pid(x, region) < 0)
		return -ENOMEM;
	/* [ShardId], then, with epochs, [Epoch]: a list each, proper. */
	for (int list = 0; list < (epochs != NULL ? 2 : 1); list++) {
		if (n > 0 && ei_x_encode_list_header(x, (long)n) < 0)
			return -ENOMEM;
		for (size_t k = 0; k < n; k++)
			if (term_x_encode_uint(x, list == 0 ? shards[k] : epochs[k]) < 0)
				return -ENOMEM;
		if (ei_x_encode_empty_list(x) < 0)
			return -ENOMEM;
	}
	return 0;
}

void shard_msg_hosting_read(const struct shard_msg *sm, uint64_t *shards, uint64_t *epochs)
{
	size_t i = 0;
	int n = (int)sm->count;
	(void)get_ints(sm->shards, &i, &n, UINT32_MAX, shards); /* checked by shard_msg_decode */
	if (sm->epochs == NULL) {
		memset(epochs, 0, sm->count * sizeof *epochs);
		return;
	}
	i = 0;
	(void)get_ints(sm->epochs, &i, &n, UINT64_MAX, epochs);
}

int shard_msg_encode_home_epoch(ei_x_buff *x, uint32_t shard, const erlang_pid *home, uint64_t epoch)
{
	if (begin(x, 5, SMSG_SHARD_HOME) || term_x_encode_uint(x, shard) < 0 || ei_x_encode_pid(x, home) < 0 ||
	    term_x_encode_uint(x, epoch) < 0)
		return -ENOMEM;
	return 0;
}

int shard_msg_encode_tell(ei_x_buff *x, const erlang_pid *sender, const char *id, size_t id_len,
			  const char *msg, size_t msg_len)
{
	if (begin(x, 5, SMSG_TELL))
		return -ENOMEM;
	if ((sender ? ei_x_encode_pid(x, sender) : term_x_encode_atom(x, "undefined")) < 0)
		return -ENOMEM;
	if (term_x_append_raw(x, id, id_len) || term_x_append_raw(x, msg, msg_len))
		return -ENOMEM;
	return 0;
}
