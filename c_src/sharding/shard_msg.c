/* shard_msg.c — see shard_msg.h. */
#include "sharding/shard_msg.h"

#include <errno.h>
#include <string.h>

#include "etf/shardnode_msg.h"
#include "etf/term.h"

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
	case SMSG_GET_STATS:
	case SMSG_GET_SHARD_HOME:
	case SMSG_SHARD_HOME:
	case SMSG_SHARD_WAITS:
	case SMSG_BEGIN_HANDOFF:
	case SMSG_HANDOFF_ACK:
	case SMSG_SHARD_STOPPED:
		if (arity != 4 || !get_shard(t, &i, &out->shard) || !get_pid(t, &i, &out->pid))
			return -EPROTO;
		out->has_pid = true;
		break;
	case SMSG_HOSTING: {
		if (arity != 4 || !get_pid(t, &i, &out->pid))
			return -EPROTO;
		out->has_pid = true;
		out->shards = t + i;
		/* Check the list now, so its readers need not. */
		int ii = (int)i, n;
		if (ei_decode_list_header(t, &ii, &n) < 0)
			return -EPROTO;
		i = (size_t)ii;
		for (int e = 0; e < n; e++) {
			uint32_t shard;
			if (!get_shard(t, &i, &shard))
				return -EPROTO;
		}
		if (n > 0) {
			ii = (int)i;
			if (ei_decode_list_header(t, &ii, &n) < 0 || n != 0)
				return -EPROTO;
			i = (size_t)ii;
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
	if (begin(x, 4, kind) || ei_x_encode_ulong(x, shard) < 0 || ei_x_encode_pid(x, pid) < 0)
		return -ENOMEM;
	return 0;
}

int shard_msg_encode_stats(ei_x_buff *x, uint32_t request, const char *node, const char *map, size_t map_len)
{
	if (begin(x, 5, SMSG_STATS) || ei_x_encode_ulong(x, request) < 0 || ei_x_encode_atom(x, node) < 0)
		return -ENOMEM;
	return term_x_append_raw(x, map, map_len);
}

int shard_msg_encode_handoff(ei_x_buff *x, uint32_t shard, uint32_t acks, const erlang_pid *to)
{
	if (begin(x, 5, SMSG_HANDOFF) || ei_x_encode_ulong(x, shard) < 0 || ei_x_encode_ulong(x, acks) < 0 ||
	    ei_x_encode_pid(x, to) < 0)
		return -ENOMEM;
	return 0;
}

int shard_msg_encode_state_chunk(ei_x_buff *x, uint32_t shard, uint32_t seq, bool last, const erlang_pid *from,
				 const char *chunk, size_t chunk_len)
{
	if (begin(x, 7, SMSG_SHARD_STATE) || ei_x_encode_ulong(x, shard) < 0 || ei_x_encode_ulong(x, seq) < 0 ||
	    ei_x_encode_atom(x, last ? "true" : "false") < 0 || ei_x_encode_pid(x, from) < 0)
		return -ENOMEM;
	return term_x_append_raw(x, chunk, chunk_len);
}

int shard_msg_encode_state_ack(ei_x_buff *x, uint32_t shard, uint32_t seq, const erlang_pid *region)
{
	if (begin(x, 5, SMSG_SHARD_STATE_ACK) || ei_x_encode_ulong(x, shard) < 0 || ei_x_encode_ulong(x, seq) < 0 ||
	    ei_x_encode_pid(x, region) < 0)
		return -ENOMEM;
	return 0;
}

int shard_msg_encode_hosting(ei_x_buff *x, const erlang_pid *region, const uint32_t *shards, size_t n)
{
	if (begin(x, 4, SMSG_HOSTING) || ei_x_encode_pid(x, region) < 0)
		return -ENOMEM;
	if (n > 0 && ei_x_encode_list_header(x, (long)n) < 0)
		return -ENOMEM;
	for (size_t k = 0; k < n; k++)
		if (ei_x_encode_ulong(x, shards[k]) < 0)
			return -ENOMEM;
	return ei_x_encode_empty_list(x) < 0 ? -ENOMEM : 0;
}

int shard_msg_encode_tell(ei_x_buff *x, const erlang_pid *sender, const char *id, size_t id_len,
			  const char *msg, size_t msg_len)
{
	if (begin(x, 5, SMSG_TELL))
		return -ENOMEM;
	if ((sender ? ei_x_encode_pid(x, sender) : ei_x_encode_atom(x, "undefined")) < 0)
		return -ENOMEM;
	if (term_x_append_raw(x, id, id_len) || term_x_append_raw(x, msg, msg_len))
		return -ENOMEM;
	return 0;
}
