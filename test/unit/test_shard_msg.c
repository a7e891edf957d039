/*
 * test_shard_msg.c — the '$shardnode' messages between regions and
 * coordinators: every encoder read back by shard_msg_decode, the terms that
 * are not such messages, the malformed ones, and truncated or corrupted
 * encodings (validated first, as the node does) that must never crash.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <ei.h>

#include "etf/shard_msg.h"
#include "etf/term.h"
#include "etf/term_validate.h"
#include "unit_helpers.h"

#define NODE "region@127.0.0.1"

/* ---- helpers ---- */

static void assert_same_pid(const erlang_pid *a, const erlang_pid *b)
{
	cr_assert_str_eq(a->node, b->node);
	cr_assert_eq(a->num, b->num);
	cr_assert_eq(a->serial, b->serial);
	cr_assert_eq(a->creation, b->creation);
}

/* Decodes the body of x (which must be a valid term with or without the
 * version byte) from an exact-size copy, which the caller frees. */
static int decode_copy(const ei_x_buff *x, struct shard_msg *m, char **copy)
{
	size_t skip = (x->index > 0 && (unsigned char)x->buff[0] == TERM_VERSION_MAGIC) ? 1 : 0;
	size_t len = (size_t)x->index - skip;
	*copy = sn_dup_exact(x->buff + skip, len);
	size_t end = 0;
	cr_assert_eq(term_validate(*copy, len, &end), 0, "test input must be a valid term");
	cr_assert_eq(end, len, "test input must be exactly one term");
	return shard_msg_decode(*copy, len, m);
}

static int decode_x(const ei_x_buff *x)
{
	struct shard_msg m;
	char *p;
	int rc = decode_copy(x, &m, &p);
	free(p);
	return rc;
}

/* Decodes the term written by ei_x_format_wo_ver(fmt). */
static int decode_fmt(const char *fmt)
{
	ei_x_buff x;
	sn_x_new(&x);
	cr_assert_eq(ei_x_format_wo_ver(&x, fmt), 0, "format %s", fmt);
	int rc = decode_x(&x);
	ei_x_free(&x);
	return rc;
}

/* {'$shardnode', Kind, <extra terms appended raw>}: builds a message by
 * hand, so arities and element types can be wrong on purpose. */
static void begin_msg(ei_x_buff *x, int arity, const char *kind)
{
	sn_x_new(x);
	cr_assert_eq(ei_x_encode_tuple_header(x, arity), 0);
	cr_assert_eq(ei_x_encode_atom(x, "$shardnode"), 0);
	cr_assert_eq(ei_x_encode_atom(x, kind), 0);
}

/* ---- round trips ---- */

Test(shard_msg, pid_messages_round_trip)
{
	static const enum shard_msg_kind kinds[] = {SMSG_REGISTER, SMSG_REGISTERED, SMSG_REGION_STOPPED,
						    SMSG_REGISTER_PROXY, SMSG_REGION_LEAVING, SMSG_REGISTER_AGAIN,
						    SMSG_REGION_BACK};
	static const char *const names[] = {"register", "registered", "region_stopped", "register_proxy",
					    "region_leaving", "register_again", "region_back"};
	for (size_t k = 0; k < SN_ARRAY_LEN(kinds); k++) {
		erlang_pid pid = sn_pid(NODE, 100 + (unsigned)k, 3);
		ei_x_buff x;
		sn_x_new(&x);
		cr_assert_eq(shard_msg_encode_pid(&x, kinds[k], &pid), 0);
		cr_assert_eq((unsigned char)x.buff[0], TERM_VERSION_MAGIC, "encoders write the version byte");

		/* It reads back as {'$shardnode', Kind, Pid}. */
		char *text = NULL;
		int i = 1;
		cr_assert_geq(ei_s_print_term(&text, x.buff, &i), 0);
		cr_assert_eq(strncmp(text, "{'$shardnode', ", 15), 0, "%s", text);
		cr_assert_eq(strncmp(text + 15, names[k], strlen(names[k])), 0, "%s", text);
		free(text);

		struct shard_msg m;
		memset(&m, 0xAB, sizeof m);
		char *p;
		cr_assert_eq(decode_copy(&x, &m, &p), 1);
		cr_assert_eq(m.kind, kinds[k]);
		cr_assert(m.has_pid);
		assert_same_pid(&m.pid, &pid);
		free(p);
		ei_x_free(&x);
	}
}

Test(shard_msg, shard_messages_round_trip)
{
	static const uint32_t shards[] = {0, 1, 255, 256, 65535, 65536, 999999, INT32_MAX, (uint32_t)INT32_MAX + 1,
					  UINT32_MAX - 1, UINT32_MAX};
	static const enum shard_msg_kind kinds[] = {SMSG_GET_SHARD_HOME, SMSG_SHARD_HOME, SMSG_BEGIN_HANDOFF,
						    SMSG_HANDOFF_ACK, SMSG_SHARD_STOPPED, SMSG_GET_STATS,
						    SMSG_SHARD_WAITS};
	for (size_t k = 0; k < SN_ARRAY_LEN(kinds); k++) {
		for (size_t s = 0; s < SN_ARRAY_LEN(shards); s++) {
			erlang_pid pid = sn_pid(NODE, 7, (unsigned)s);
			ei_x_buff x;
			sn_x_new(&x);
			cr_assert_eq(shard_msg_encode_shard(&x, kinds[k], shards[s], &pid), 0);
			struct shard_msg m;
			char *p;
			cr_assert_eq(decode_copy(&x, &m, &p), 1, "shard %u", shards[s]);
			cr_assert_eq(m.kind, kinds[k]);
			cr_assert_eq(m.shard, shards[s]);
			cr_assert(m.has_pid);
			assert_same_pid(&m.pid, &pid);
			free(p);
			ei_x_free(&x);
		}
	}
}

Test(shard_msg, handoff_round_trip)
{
	static const uint32_t counts[] = {0, 1, 2, 1000, UINT32_MAX};
	erlang_pid to = sn_pid(NODE, 41, 2);
	for (size_t k = 0; k < SN_ARRAY_LEN(counts); k++) {
		ei_x_buff x;
		sn_x_new(&x);
		cr_assert_eq(shard_msg_encode_handoff(&x, 17, counts[k], &to), 0);
		struct shard_msg m;
		char *p;
		cr_assert_eq(decode_copy(&x, &m, &p), 1);
		cr_assert_eq(m.kind, SMSG_HANDOFF);
		cr_assert_eq(m.shard, 17);
		cr_assert_eq(m.count, counts[k]);
		cr_assert(m.has_pid);
		assert_same_pid(&m.pid, &to);
		free(p);
		ei_x_free(&x);
	}
	cr_assert_eq(decode_fmt("{'$shardnode', handoff, 1}"), -EPROTO);
	cr_assert_eq(decode_fmt("{'$shardnode', handoff, 1, 2}"), -EPROTO, "the destination is part of it");
	cr_assert_eq(decode_fmt("{'$shardnode', handoff, 1, -1, x}"), -EPROTO);
	cr_assert_eq(decode_fmt("{'$shardnode', handoff, 1, x, y}"), -EPROTO);
	cr_assert_eq(decode_fmt("{'$shardnode', handoff, 1, 2, x}"), -EPROTO, "x is no pid");
}

Test(shard_msg, state_chunk_round_trip)
{
	erlang_pid from = sn_pid(NODE, 5, 1);
	ei_x_buff chunk;
	sn_x_new(&chunk);
	cr_assert_eq(ei_x_format_wo_ver(&chunk, "[{~i, ~i}, {~a, ~i}]", 1, 10, "b", 20), 0);
	static const uint32_t seqs[] = {0, 1, 1000, UINT32_MAX};
	for (size_t k = 0; k < SN_ARRAY_LEN(seqs); k++) {
		for (int last = 0; last <= 1; last++) {
			ei_x_buff x;
			sn_x_new(&x);
			cr_assert_eq(shard_msg_encode_state_chunk(&x, 9, seqs[k], last, &from, chunk.buff,
								  (size_t)chunk.index), 0);
			struct shard_msg m;
			char *p;
			cr_assert_eq(decode_copy(&x, &m, &p), 1);
			cr_assert_eq(m.kind, SMSG_SHARD_STATE);
			cr_assert_eq(m.shard, 9);
			cr_assert_eq(m.count, seqs[k]);
			cr_assert_eq(m.last, (bool)last);
			assert_same_pid(&m.pid, &from);
			cr_assert_eq(m.msg_len, (size_t)chunk.index);
			cr_assert_eq(memcmp(m.msg, chunk.buff, m.msg_len), 0, "the chunk is carried byte for byte");
			free(p);
			ei_x_free(&x);
		}
	}
	/* An empty chunk (a shard whose entities all went idle) is a chunk. */
	ei_x_buff x;
	sn_x_new(&x);
	cr_assert_eq(shard_msg_encode_state_chunk(&x, 9, 0, true, &from, "\x6a", 1), 0);
	cr_assert_eq(decode_x(&x), 1);
	ei_x_free(&x);
	ei_x_free(&chunk);
}

Test(shard_msg, malformed_state_chunks_are_refused)
{
	/* Built by hand: arity, Last, the pid and the chunk's type. */
	static const char *const bad[] = {
		"{'$shardnode', shard_state, 1, 0, true, []}",
		"{'$shardnode', shard_state, 1, 0, maybe, x, []}",
		"{'$shardnode', shard_state, -1, 0, true, x, []}",
		"{'$shardnode', shard_state, 1, 0, true, x, []}",
	};
	for (size_t k = 0; k < SN_ARRAY_LEN(bad); k++)
		cr_assert_eq(decode_fmt(bad[k]), -EPROTO, "%s", bad[k]);
	/* A chunk that is no list. */
	erlang_pid from = sn_pid(NODE, 5, 1);
	ei_x_buff x;
	begin_msg(&x, 7, "shard_state");
	ei_x_encode_ulong(&x, 1);
	ei_x_encode_ulong(&x, 0);
	ei_x_encode_atom(&x, "true");
	ei_x_encode_pid(&x, &from);
	ei_x_encode_atom(&x, "chunk");
	cr_assert_eq(decode_x(&x), -EPROTO);
	ei_x_free(&x);
}

Test(shard_msg, state_ack_round_trip)
{
	erlang_pid region = sn_pid(NODE, 8, 0);
	ei_x_buff x;
	sn_x_new(&x);
	cr_assert_eq(shard_msg_encode_state_ack(&x, 3, 77, &region), 0);
	struct shard_msg m;
	char *p;
	cr_assert_eq(decode_copy(&x, &m, &p), 1);
	cr_assert_eq(m.kind, SMSG_SHARD_STATE_ACK);
	cr_assert_eq(m.shard, 3);
	cr_assert_eq(m.count, 77);
	assert_same_pid(&m.pid, &region);
	free(p);
	ei_x_free(&x);
	cr_assert_eq(decode_fmt("{'$shardnode', shard_state_ack, 3, 77}"), -EPROTO);
	cr_assert_eq(decode_fmt("{'$shardnode', shard_state_ack, 3, x, y}"), -EPROTO);
}

Test(shard_msg, stats_round_trip)
{
	ei_x_buff map;
	sn_x_new(&map);
	ei_x_encode_map_header(&map, 2);
	ei_x_encode_long(&map, 3);
	ei_x_encode_long(&map, 10);
	ei_x_encode_long(&map, 7);
	ei_x_encode_long(&map, 1);
	ei_x_buff x;
	sn_x_new(&x);
	cr_assert_eq(shard_msg_encode_stats(&x, 42, "a@host", map.buff, (size_t)map.index), 0);
	struct shard_msg m;
	char *p;
	cr_assert_eq(decode_copy(&x, &m, &p), 1);
	cr_assert_eq(m.kind, SMSG_STATS);
	cr_assert_eq(m.shard, 42, "the request id travels where a shard id does");
	cr_assert_eq(m.msg_len, (size_t)map.index);
	cr_assert_eq(memcmp(m.msg, map.buff, m.msg_len), 0, "the map comes back byte for byte");
	char node[MAXATOMLEN_UTF8];
	int i = 0;
	cr_assert_eq(ei_decode_atom(m.id, &i, node), 0);
	cr_assert_str_eq(node, "a@host");
	free(p);
	ei_x_free(&x);
	ei_x_free(&map);
	cr_assert_eq(decode_fmt("{'$shardnode', stats, 1, 'a@h', notamap}"), -EPROTO);
	cr_assert_eq(decode_fmt("{'$shardnode', stats, 1, \"a@h\", notamap}"), -EPROTO);
	cr_assert_eq(decode_fmt("{'$shardnode', stats, 1, 'a@h'}"), -EPROTO);
}

Test(shard_msg, hosting_round_trip)
{
	static const uint32_t shards[] = {0, 5, 99, 65536, UINT32_MAX};
	erlang_pid pid = sn_pid(NODE, 3, 1);
	for (size_t n = 0; n <= SN_ARRAY_LEN(shards); n++) {
		ei_x_buff x;
		sn_x_new(&x);
		cr_assert_eq(shard_msg_encode_hosting(&x, &pid, shards, NULL, n), 0);
		struct shard_msg m;
		char *p;
		cr_assert_eq(decode_copy(&x, &m, &p), 1);
		cr_assert_eq(m.kind, SMSG_HOSTING);
		assert_same_pid(&m.pid, &pid);
		/* The list the decoder checked reads back as what was sent. */
		cr_assert_eq(m.count, (uint32_t)n);
		cr_assert_null(m.epochs);
		uint64_t got[SN_ARRAY_LEN(shards) + 1], epochs[SN_ARRAY_LEN(shards) + 1];
		shard_msg_hosting_read(&m, got, epochs);
		for (size_t e = 0; e < n; e++) {
			cr_assert_eq(got[e], shards[e]);
			cr_assert_eq(epochs[e], 0u, "no epoch stated");
		}
		free(p);
		ei_x_free(&x);
	}
}

Test(shard_msg, shard_home_with_an_epoch_round_trips)
{
	static const uint64_t epochs[] = {0, 1, 255, 65536, UINT32_MAX, (uint64_t)UINT32_MAX + 1, UINT64_MAX};
	erlang_pid home = sn_pid(NODE, 9, 2);
	for (size_t k = 0; k < SN_ARRAY_LEN(epochs); k++) {
		ei_x_buff x;
		sn_x_new(&x);
		cr_assert_eq(shard_msg_encode_home_epoch(&x, 42, &home, epochs[k]), 0);
		struct shard_msg m;
		char *p;
		cr_assert_eq(decode_copy(&x, &m, &p), 1, "epoch %llu", (unsigned long long)epochs[k]);
		cr_assert_eq(m.kind, SMSG_SHARD_HOME);
		cr_assert_eq(m.shard, 42u);
		assert_same_pid(&m.pid, &home);
		cr_assert(m.has_epoch);
		cr_assert_eq(m.epoch, epochs[k]);
		free(p);
		ei_x_free(&x);
	}
	/* Without one (every release before protocol 2): none. */
	ei_x_buff x;
	sn_x_new(&x);
	cr_assert_eq(shard_msg_encode_shard(&x, SMSG_SHARD_HOME, 42, &home), 0);
	struct shard_msg m;
	char *p;
	cr_assert_eq(decode_copy(&x, &m, &p), 1);
	cr_assert(!m.has_epoch);
	free(p);
	ei_x_free(&x);
	cr_assert_eq(decode_fmt("{'$shardnode', shard_home, 1, x, -1}"), -EPROTO, "not a pid");
}

Test(shard_msg, hosting_with_epochs_round_trips)
{
	static const uint32_t shards[] = {0, 5, 99, 65536, UINT32_MAX};
	static const uint64_t epochs[] = {0, 7, (uint64_t)UINT32_MAX + 1, 3, UINT64_MAX};
	erlang_pid pid = sn_pid(NODE, 3, 1);
	for (size_t n = 0; n <= SN_ARRAY_LEN(shards); n++) {
		ei_x_buff x;
		sn_x_new(&x);
		cr_assert_eq(shard_msg_encode_hosting(&x, &pid, shards, epochs, n), 0);
		struct shard_msg m;
		char *p;
		cr_assert_eq(decode_copy(&x, &m, &p), 1);
		cr_assert_eq(m.kind, SMSG_HOSTING);
		cr_assert_eq(m.count, (uint32_t)n);
		cr_assert_not_null(m.epochs);
		uint64_t got[SN_ARRAY_LEN(shards) + 1], got_epochs[SN_ARRAY_LEN(shards) + 1];
		shard_msg_hosting_read(&m, got, got_epochs);
		for (size_t e = 0; e < n; e++) {
			cr_assert_eq(got[e], shards[e]);
			cr_assert_eq(got_epochs[e], epochs[e]);
		}
		free(p);
		ei_x_free(&x);
	}
	/* The four-element form states none. */
	ei_x_buff x;
	sn_x_new(&x);
	cr_assert_eq(shard_msg_encode_hosting(&x, &pid, shards, NULL, 2), 0);
	struct shard_msg m;
	char *p;
	cr_assert_eq(decode_copy(&x, &m, &p), 1);
	cr_assert_null(m.epochs);
	cr_assert_eq(m.count, 2u);
	free(p);
	ei_x_free(&x);
}

/* The BEAM sends a list of integers below 256 as a string: [3, 4] and [0,
 * 9] arrive as "\3\4" and "\0\t". */
Test(shard_msg, hosting_lists_sent_as_strings)
{
	erlang_pid pid = sn_pid(NODE, 3, 1);
	ei_x_buff x;
	begin_msg(&x, 5, "hosting");
	ei_x_encode_pid(&x, &pid);
	ei_x_encode_string_len(&x, "\3\4", 2);
	ei_x_encode_string_len(&x, "\0\t", 2);
	struct shard_msg m;
	char *p;
	cr_assert_eq(decode_copy(&x, &m, &p), 1);
	cr_assert_eq(m.count, 2u);
	uint64_t shards[2], epochs[2];
	shard_msg_hosting_read(&m, shards, epochs);
	cr_assert_eq(shards[0], 3u);
	cr_assert_eq(shards[1], 4u);
	cr_assert_eq(epochs[0], 0u);
	cr_assert_eq(epochs[1], 9u);
	free(p);
	ei_x_free(&x);

	/* A string of another length than the shards' is refused. */
	begin_msg(&x, 5, "hosting");
	ei_x_encode_pid(&x, &pid);
	ei_x_encode_string_len(&x, "\3\4", 2);
	ei_x_encode_string_len(&x, "\0", 1);
	cr_assert_eq(decode_x(&x), -EPROTO);
	ei_x_free(&x);

	/* The four-element form too. */
	begin_msg(&x, 4, "hosting");
	ei_x_encode_pid(&x, &pid);
	ei_x_encode_string_len(&x, "\7", 1);
	cr_assert_eq(decode_copy(&x, &m, &p), 1);
	shard_msg_hosting_read(&m, shards, epochs);
	cr_assert_eq(m.count, 1u);
	cr_assert_eq(shards[0], 7u);
	free(p);
	ei_x_free(&x);
}

Test(shard_msg, hosting_with_bad_epochs)
{
	erlang_pid pid = sn_pid(NODE, 3, 1);
	static const char *const bad[] = {"[1]", "[]", "[1, 2, 3]", "[1, -2]", "[1, x]", "x"};
	for (size_t k = 0; k < SN_ARRAY_LEN(bad); k++) {
		ei_x_buff x;
		begin_msg(&x, 5, "hosting");
		ei_x_encode_pid(&x, &pid);
		cr_assert_eq(ei_x_format_wo_ver(&x, "[4, 5]"), 0);
		cr_assert_eq(ei_x_format_wo_ver(&x, bad[k]), 0, "%s", bad[k]);
		cr_assert_eq(decode_x(&x), -EPROTO, "epochs %s for two shards", bad[k]);
		ei_x_free(&x);
	}
	ei_x_buff x;
	begin_msg(&x, 5, "hosting");
	ei_x_encode_pid(&x, &pid);
	cr_assert_eq(ei_x_format_wo_ver(&x, "[4, 5]"), 0);
	ei_x_encode_list_header(&x, 2); /* [1, 2 | 3] */
	ei_x_encode_long(&x, 1);
	ei_x_encode_long(&x, 2);
	ei_x_encode_long(&x, 3);
	cr_assert_eq(decode_x(&x), -EPROTO, "an improper list of epochs");
	ei_x_free(&x);

	begin_msg(&x, 6, "hosting");
	ei_x_encode_pid(&x, &pid);
	ei_x_encode_empty_list(&x);
	ei_x_encode_empty_list(&x);
	ei_x_encode_empty_list(&x);
	cr_assert_eq(decode_x(&x), -EPROTO, "six elements");
	ei_x_free(&x);
}

Test(shard_msg, hosting_with_bad_lists)
{
	erlang_pid pid = sn_pid(NODE, 3, 1);
	ei_x_buff x;
	begin_msg(&x, 4, "hosting");
	ei_x_encode_pid(&x, &pid);
	ei_x_encode_list_header(&x, 2);
	ei_x_encode_long(&x, 1);
	ei_x_encode_atom(&x, "two"); /* not a shard id */
	ei_x_encode_empty_list(&x);
	cr_assert_eq(decode_x(&x), -EPROTO);
	ei_x_free(&x);

	begin_msg(&x, 4, "hosting");
	ei_x_encode_pid(&x, &pid);
	ei_x_encode_long(&x, 7); /* not a list */
	cr_assert_eq(decode_x(&x), -EPROTO);
	ei_x_free(&x);
}

static void check_tell(const erlang_pid *sender)
{
	ei_x_buff id, msg;
	sn_x_new(&id);
	cr_assert_eq(ei_x_format_wo_ver(&id, "{user, \"alice\", 42}"), 0);
	sn_x_new(&msg);
	cr_assert_eq(ei_x_format_wo_ver(&msg, "{deposit, [1, 2.5, {x}], y}"), 0);

	ei_x_buff x;
	sn_x_new(&x);
	cr_assert_eq(shard_msg_encode_tell(&x, sender, id.buff, (size_t)id.index, msg.buff, (size_t)msg.index), 0);
	struct shard_msg m;
	char *p;
	cr_assert_eq(decode_copy(&x, &m, &p), 1);
	cr_assert_eq(m.kind, SMSG_TELL);
	cr_assert_eq(m.has_pid, sender != NULL);
	if (sender)
		assert_same_pid(&m.pid, sender);
	cr_assert_eq(m.id_len, (size_t)id.index);
	cr_assert_eq(memcmp(m.id, id.buff, m.id_len), 0, "id bytes as sent");
	cr_assert_eq(m.msg_len, (size_t)msg.index);
	cr_assert_eq(memcmp(m.msg, msg.buff, m.msg_len), 0, "msg bytes as sent");
	size_t len = (size_t)x.index - 1;
	cr_assert(m.id > p && m.msg + m.msg_len == p + len, "pointers into the decoded term");
	free(p);
	ei_x_free(&x);
	ei_x_free(&id);
	ei_x_free(&msg);
}

Test(shard_msg, tell_without_sender)
{
	check_tell(NULL);
}

Test(shard_msg, tell_with_sender)
{
	erlang_pid pid = sn_pid("client@127.0.0.1", 555, 1);
	check_tell(&pid);
}

Test(shard_msg, tell_with_small_terms)
{
	/* The smallest id and message: one byte each, []. */
	static const char nil = ERL_NIL_EXT;
	ei_x_buff x;
	sn_x_new(&x);
	cr_assert_eq(shard_msg_encode_tell(&x, NULL, &nil, 1, &nil, 1), 0);
	struct shard_msg m;
	char *p;
	cr_assert_eq(decode_copy(&x, &m, &p), 1);
	cr_assert_eq(m.id_len, 1);
	cr_assert_eq(m.msg_len, 1);
	cr_assert_eq(m.id[0], ERL_NIL_EXT);
	cr_assert_eq(m.msg[0], ERL_NIL_EXT);
	free(p);
	ei_x_free(&x);
}

Test(shard_msg, latin1_tag_and_kind)
{
	/* A peer may write the atoms as latin1 ATOM_EXT; they are the same atoms. */
	erlang_pid pid = sn_pid(NODE, 1, 0);
	ei_x_buff x;
	sn_x_new(&x);
	cr_assert_eq(ei_x_encode_tuple_header(&x, 3), 0);
	static const unsigned char tag[] = {ERL_ATOM_EXT, 0, 10, '$', 's', 'h', 'a', 'r', 'd', 'n', 'o', 'd', 'e'};
	static const unsigned char kind[] = {ERL_ATOM_EXT, 0, 8, 'r', 'e', 'g', 'i', 's', 't', 'e', 'r'};
	cr_assert_eq(ei_x_append_buf(&x, (const char *)tag, sizeof tag), 0);
	cr_assert_eq(ei_x_append_buf(&x, (const char *)kind, sizeof kind), 0);
	cr_assert_eq(ei_x_encode_pid(&x, &pid), 0);
	struct shard_msg m;
	char *p;
	cr_assert_eq(decode_copy(&x, &m, &p), 1);
	cr_assert_eq(m.kind, SMSG_REGISTER);
	assert_same_pid(&m.pid, &pid);
	free(p);
	ei_x_free(&x);
}

/* ---- not ours ---- */

Test(shard_msg, other_terms_are_not_messages)
{
	cr_assert_eq(decode_fmt("foo"), 0);
	cr_assert_eq(decode_fmt("'$shardnode'"), 0, "the bare atom");
	cr_assert_eq(decode_fmt("{}"), 0);
	cr_assert_eq(decode_fmt("{user, 42}"), 0, "an {EntityId, Msg} pair");
	cr_assert_eq(decode_fmt("{'$shardnodes', register, x}"), 0);
	cr_assert_eq(decode_fmt("{shardnode, register, x}"), 0);
	cr_assert_eq(decode_fmt("{\"$shardnode\", register, x}"), 0, "a string, not the atom");
	cr_assert_eq(decode_fmt("{register, '$shardnode', x}"), 0, "the tag must come first");
	cr_assert_eq(decode_fmt("['$shardnode', register, x]"), 0, "a list");
	cr_assert_eq(decode_fmt("42"), 0);

	ei_x_buff x;
	sn_x_new(&x);
	cr_assert_eq(ei_x_encode_binary(&x, "$shardnode", 10), 0);
	cr_assert_eq(decode_x(&x), 0, "a binary");
	ei_x_free(&x);
}

/* ---- malformed ---- */

Test(shard_msg, tag_alone_or_with_a_bad_kind)
{
	cr_assert_eq(decode_fmt("{'$shardnode'}"), -EPROTO, "tagged, but nothing else");
	cr_assert_eq(decode_fmt("{'$shardnode', register}"), -EPROTO);
	cr_assert_eq(decode_fmt("{'$shardnode', bogus, x}"), -EPROTO, "unknown kind");
	cr_assert_eq(decode_fmt("{'$shardnode', 5, x}"), -EPROTO, "kind not an atom");
	cr_assert_eq(decode_fmt("{'$shardnode', \"register\", x}"), -EPROTO);
	cr_assert_eq(decode_fmt("{'$shardnode', {register}, x}"), -EPROTO);
	cr_assert_eq(decode_fmt("{'$shardnode', 'Register', x}"), -EPROTO, "kinds are case-sensitive");
}

Test(shard_msg, wrong_arity)
{
	erlang_pid pid = sn_pid(NODE, 1, 0);
	static const char *const pid_kinds[] = {"register", "registered", "region_stopped"};
	for (size_t k = 0; k < SN_ARRAY_LEN(pid_kinds); k++) {
		ei_x_buff x;
		begin_msg(&x, 4, pid_kinds[k]);
		cr_assert_eq(ei_x_encode_pid(&x, &pid), 0);
		cr_assert_eq(ei_x_encode_atom(&x, "extra"), 0);
		cr_assert_eq(decode_x(&x), -EPROTO, "%s with 4 elements", pid_kinds[k]);
		ei_x_free(&x);

		begin_msg(&x, 2, pid_kinds[k]);
		cr_assert_eq(decode_x(&x), -EPROTO, "%s with 2 elements", pid_kinds[k]);
		ei_x_free(&x);
	}
	static const char *const shard_kinds[] = {"get_shard_home", "shard_home"};
	for (size_t k = 0; k < SN_ARRAY_LEN(shard_kinds); k++) {
		ei_x_buff x;
		begin_msg(&x, 3, shard_kinds[k]);
		cr_assert_eq(ei_x_encode_ulong(&x, 3), 0);
		cr_assert_eq(decode_x(&x), -EPROTO, "%s without pid", shard_kinds[k]);
		ei_x_free(&x);

		begin_msg(&x, 3, shard_kinds[k]);
		cr_assert_eq(ei_x_encode_pid(&x, &pid), 0);
		cr_assert_eq(decode_x(&x), -EPROTO, "%s without shard", shard_kinds[k]);
		ei_x_free(&x);

		begin_msg(&x, 5, shard_kinds[k]);
		cr_assert_eq(ei_x_encode_ulong(&x, 3), 0);
		cr_assert_eq(ei_x_encode_pid(&x, &pid), 0);
		cr_assert_eq(ei_x_encode_atom(&x, "extra"), 0);
		cr_assert_eq(decode_x(&x), -EPROTO, "%s with 5 elements", shard_kinds[k]);
		ei_x_free(&x);
	}
	/* tell: 5 elements exactly. */
	ei_x_buff x;
	begin_msg(&x, 4, "tell");
	cr_assert_eq(ei_x_encode_atom(&x, "undefined"), 0);
	cr_assert_eq(ei_x_encode_atom(&x, "id"), 0);
	cr_assert_eq(decode_x(&x), -EPROTO, "tell with 4 elements");
	ei_x_free(&x);
	begin_msg(&x, 6, "tell");
	cr_assert_eq(ei_x_encode_atom(&x, "undefined"), 0);
	cr_assert_eq(ei_x_encode_atom(&x, "id"), 0);
	cr_assert_eq(ei_x_encode_atom(&x, "msg"), 0);
	cr_assert_eq(ei_x_encode_atom(&x, "more"), 0);
	cr_assert_eq(decode_x(&x), -EPROTO, "tell with 6 elements");
	ei_x_free(&x);
}

Test(shard_msg, bad_shard_ids)
{
	erlang_pid pid = sn_pid(NODE, 1, 0);
	static const char *const kinds[] = {"get_shard_home", "shard_home"};
	for (size_t k = 0; k < SN_ARRAY_LEN(kinds); k++) {
		for (int bad = 0; bad < 8; bad++) {
			ei_x_buff x;
			begin_msg(&x, 4, kinds[k]);
			switch (bad) {
			case 0: cr_assert_eq(ei_x_encode_long(&x, -1), 0); break;
			case 1: cr_assert_eq(ei_x_encode_long(&x, -1000000), 0); break;
			case 2: cr_assert_eq(ei_x_encode_longlong(&x, (long long)UINT32_MAX + 1), 0); break;
			case 3: cr_assert_eq(ei_x_encode_longlong(&x, -(long long)UINT32_MAX - 5), 0); break;
			case 4: cr_assert_eq(ei_x_encode_double(&x, 3.0), 0); break;
			case 5: cr_assert_eq(ei_x_encode_atom(&x, "three"), 0); break;
			case 6: cr_assert_eq(ei_x_encode_string(&x, "3"), 0); break;
			case 7: {
				/* A bignum too wide for any C integer. */
				static const unsigned char big[] = {ERL_SMALL_BIG_EXT, 12, 0, 1, 2, 3, 4, 5, 6, 7,
								    8, 9, 10, 11, 12};
				cr_assert_eq(ei_x_append_buf(&x, (const char *)big, sizeof big), 0);
				break;
			}
			}
			cr_assert_eq(ei_x_encode_pid(&x, &pid), 0);
			cr_assert_eq(decode_x(&x), -EPROTO, "%s, bad shard #%d", kinds[k], bad);
			ei_x_free(&x);
		}
	}
}

Test(shard_msg, bad_pids)
{
	static const char *const kinds[] = {"register", "registered", "region_stopped"};
	for (size_t k = 0; k < SN_ARRAY_LEN(kinds); k++) {
		ei_x_buff x;
		begin_msg(&x, 3, kinds[k]);
		cr_assert_eq(ei_x_encode_atom(&x, "undefined"), 0);
		cr_assert_eq(decode_x(&x), -EPROTO, "%s of undefined", kinds[k]);
		ei_x_free(&x);

		erlang_ref ref = sn_ref(NODE, 1);
		begin_msg(&x, 3, kinds[k]);
		cr_assert_eq(ei_x_encode_ref(&x, &ref), 0);
		cr_assert_eq(decode_x(&x), -EPROTO, "%s of a ref", kinds[k]);
		ei_x_free(&x);
	}
	ei_x_buff x;
	begin_msg(&x, 4, "shard_home");
	cr_assert_eq(ei_x_encode_ulong(&x, 1), 0);
	cr_assert_eq(ei_x_encode_atom(&x, "undefined"), 0);
	cr_assert_eq(decode_x(&x), -EPROTO, "shard_home has no undefined home");
	ei_x_free(&x);

	/* tell's sender: a pid or the atom undefined, nothing else. */
	static const char *const senders[] = {"nobody", "undefine", "Undefined"};
	for (size_t k = 0; k < SN_ARRAY_LEN(senders); k++) {
		begin_msg(&x, 5, "tell");
		cr_assert_eq(ei_x_encode_atom(&x, senders[k]), 0);
		cr_assert_eq(ei_x_encode_atom(&x, "id"), 0);
		cr_assert_eq(ei_x_encode_atom(&x, "msg"), 0);
		cr_assert_eq(decode_x(&x), -EPROTO, "sender %s", senders[k]);
		ei_x_free(&x);
	}
	begin_msg(&x, 5, "tell");
	cr_assert_eq(ei_x_encode_long(&x, 0), 0);
	cr_assert_eq(ei_x_encode_atom(&x, "id"), 0);
	cr_assert_eq(ei_x_encode_atom(&x, "msg"), 0);
	cr_assert_eq(decode_x(&x), -EPROTO, "sender 0");
	ei_x_free(&x);
}

Test(shard_msg, pid_with_an_oversized_node_atom)
{
	/* A NEW_PID_EXT whose node is 1020 latin1 bytes of 0xE9: 2040 bytes of
	 * UTF-8, more than erlang_pid.node holds. binary_to_term refuses it
	 * (over 255 characters), and so does the validator, before any
	 * decoding. */
	uint8_t pid[1 + 3 + 1020 + 12];
	pid[0] = ERL_NEW_PID_EXT;
	pid[1] = ERL_ATOM_EXT;
	sn_put16(pid + 2, 1020);
	memset(pid + 4, 0xE9, 1020);
	memset(pid + 4 + 1020, 0, 12);
	ei_x_buff x;
	begin_msg(&x, 3, "register");
	cr_assert_eq(ei_x_append_buf(&x, (const char *)pid, (int)sizeof pid), 0);
	char *p = sn_dup_exact(x.buff, (size_t)x.index);
	size_t end = 0;
	cr_assert_eq(term_validate(p, (size_t)x.index, &end), -EPROTO);
	free(p);
	ei_x_free(&x);
}

Test(shard_msg, trailing_bytes)
{
	erlang_pid pid = sn_pid(NODE, 1, 0);
	ei_x_buff msgs[4];
	for (size_t k = 0; k < 4; k++)
		sn_x_new(&msgs[k]);
	cr_assert_eq(shard_msg_encode_pid(&msgs[0], SMSG_REGISTER, &pid), 0);
	cr_assert_eq(shard_msg_encode_shard(&msgs[1], SMSG_SHARD_HOME, 9, &pid), 0);
	cr_assert_eq(shard_msg_encode_tell(&msgs[2], &pid, "j", 1, "j", 1), 0);
	cr_assert_eq(shard_msg_encode_tell(&msgs[3], NULL, "j", 1, "j", 1), 0);
	for (size_t k = 0; k < 4; k++) {
		/* The body, then one more complete term ([]). */
		size_t len = (size_t)msgs[k].index - 1;
		char *p = malloc(len + 1);
		cr_assert_not_null(p);
		memcpy(p, msgs[k].buff + 1, len);
		p[len] = ERL_NIL_EXT;
		struct shard_msg m;
		cr_assert_eq(shard_msg_decode(p, len, &m), 1, "message %zu alone", k);
		cr_assert_eq(shard_msg_decode(p, len + 1, &m), -EPROTO, "message %zu and a byte more", k);
		free(p);
		ei_x_free(&msgs[k]);
	}
}

/* ---- truncated and corrupted encodings ---- */

/* Runs decode on buf[0..len) if, as the node requires, it validates as
 * exactly one term. Returns whether it did. */
static bool decode_if_valid(const char *buf, size_t len)
{
	char *p = sn_dup_exact(buf, len);
	size_t end = 0;
	bool valid = term_validate(p, len, &end) == 0 && end == len;
	if (valid) {
		struct shard_msg m;
		int rc = shard_msg_decode(p, len, &m);
		cr_assert(rc == 1 || rc == 0 || rc == -EPROTO, "rc %d", rc);
		if (rc == 1 && m.kind == SMSG_SHARD_STATE)
			cr_assert(m.msg >= p && m.msg + m.msg_len <= p + len, "the chunk lies inside the term");
		if (rc == 1 && m.kind == SMSG_TELL) {
			/* The raw parts lie inside the term. */
			cr_assert(m.id >= p && m.id + m.id_len <= p + len);
			cr_assert(m.msg >= p && m.msg + m.msg_len <= p + len);
		}
	}
	free(p);
	return valid;
}

/* One of each encoder's messages. */
#define ALL_MSGS 12

static void encode_all(ei_x_buff msgs[ALL_MSGS])
{
	erlang_pid pid = sn_pid(NODE, 4242, 17);
	for (size_t k = 0; k < ALL_MSGS; k++)
		sn_x_new(&msgs[k]);
	cr_assert_eq(shard_msg_encode_pid(&msgs[0], SMSG_REGISTER, &pid), 0);
	cr_assert_eq(shard_msg_encode_pid(&msgs[1], SMSG_REGISTERED, &pid), 0);
	cr_assert_eq(shard_msg_encode_pid(&msgs[2], SMSG_REGION_STOPPED, &pid), 0);
	cr_assert_eq(shard_msg_encode_shard(&msgs[3], SMSG_GET_SHARD_HOME, 123456, &pid), 0);
	cr_assert_eq(shard_msg_encode_shard(&msgs[4], SMSG_SHARD_HOME, 7, &pid), 0);
	ei_x_buff id, msg;
	sn_x_new(&id);
	sn_x_new(&msg);
	cr_assert_eq(ei_x_format_wo_ver(&id, "{k, \"abc\", [1, 2]}"), 0);
	cr_assert_eq(ei_x_format_wo_ver(&msg, "{put, key, {v, 3.25, -70000}}"), 0);
	cr_assert_eq(shard_msg_encode_tell(&msgs[5], &pid, id.buff, (size_t)id.index, msg.buff, (size_t)msg.index),
		     0);
	cr_assert_eq(shard_msg_encode_tell(&msgs[6], NULL, id.buff, (size_t)id.index, msg.buff, (size_t)msg.index),
		     0);
	cr_assert_eq(shard_msg_encode_handoff(&msgs[7], 12, 3, &pid), 0);
	ei_x_buff chunk;
	sn_x_new(&chunk);
	cr_assert_eq(ei_x_format_wo_ver(&chunk, "[{k, 1}, {\"id\", {a, [2]}}]"), 0);
	cr_assert_eq(shard_msg_encode_state_chunk(&msgs[8], 12, 4, true, &pid, chunk.buff, (size_t)chunk.index), 0);
	ei_x_free(&chunk);
	cr_assert_eq(shard_msg_encode_state_ack(&msgs[9], 12, 4, &pid), 0);
	cr_assert_eq(shard_msg_encode_home_epoch(&msgs[10], 12, &pid, (uint64_t)UINT32_MAX + 9), 0);
	static const uint32_t hosted[] = {3, 70000};
	static const uint64_t epochs[] = {1, UINT64_MAX};
	cr_assert_eq(shard_msg_encode_hosting(&msgs[11], &pid, hosted, epochs, 2), 0);
	ei_x_free(&id);
	ei_x_free(&msg);
}

Test(shard_msg, every_truncation)
{
	ei_x_buff msgs[ALL_MSGS];
	encode_all(msgs);
	for (size_t k = 0; k < ALL_MSGS; k++) {
		const char *body = msgs[k].buff + 1;
		size_t len = (size_t)msgs[k].index - 1;
		size_t valid = 0;
		for (size_t n = 0; n <= len; n++)
			valid += decode_if_valid(body, n);
		cr_assert_eq(valid, 1, "message %zu: only the whole term validates", k);
		/* With the version byte left on, it is not a term either. */
		for (size_t n = 0; n <= (size_t)msgs[k].index; n++)
			(void)decode_if_valid(msgs[k].buff, n);
		ei_x_free(&msgs[k]);
	}
}

Test(shard_msg, every_single_byte_change, .timeout = 60)
{
	/* Each byte replaced by each value: those results that still validate
	 * are decoded (any answer is fine, no crash, no stray read). */
	ei_x_buff msgs[ALL_MSGS];
	encode_all(msgs);
	size_t decoded = 0;
	for (size_t k = 0; k < ALL_MSGS; k++) {
		size_t len = (size_t)msgs[k].index - 1;
		char *body = malloc(len);
		cr_assert_not_null(body);
		memcpy(body, msgs[k].buff + 1, len);
		for (size_t at = 0; at < len; at++) {
			char orig = body[at];
			for (int v = 0; v < 256; v++) {
				body[at] = (char)v;
				decoded += decode_if_valid(body, len);
			}
			body[at] = orig;
		}
		free(body);
		ei_x_free(&msgs[k]);
	}
	cr_assert_gt(decoded, 1000, "many variants still validate (%zu)", decoded);
}
