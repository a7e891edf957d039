/*
 * test_replica_msg.c — the messages of replicated state: every encoder
 * read back by replica_msg_decode and its walks, the terms that are none
 * of them, malformed ones, and every truncation and single-byte change of
 * each encoding (validated first, as the node does) decoded without a
 * crash or a read outside the term.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <bsd/string.h>

#include <criterion/criterion.h>
#include <ei.h>

#include "etf/entity_id.h"
#include "etf/term.h"
#include "etf/term_validate.h"
#include "replication/replica_msg.h"
#include "unit_helpers.h"

#define NODE "region@127.0.0.1"

/* Decodes x's body (after its version byte) from an exact-size copy,
 * which the caller frees. */
static int decode_copy(const ei_x_buff *x, struct replica_msg *m, char **copy)
{
	size_t len = (size_t)x->index - 1;
	*copy = sn_dup_exact(x->buff + 1, len);
	size_t end = 0;
	cr_assert_eq(term_validate(*copy, len, &end), 0, "test input must be a valid term");
	cr_assert_eq(end, len);
	return replica_msg_decode(*copy, len, m);
}

static int decode_fmt(const char *fmt)
{
	ei_x_buff x;
	sn_x_new_with_version(&x);
	cr_assert_eq(ei_x_format_wo_ver(&x, fmt), 0, "format %s", fmt);
	struct replica_msg m;
	char *p;
	int rc = decode_copy(&x, &m, &p);
	free(p);
	ei_x_free(&x);
	return rc;
}

/* ---- sets ---- */

struct seen_members {
	erlang_pid pids[4];
	bool complete[4];
	size_t n;
};

static int see_member(void *arg, const erlang_pid *pid, bool complete)
{
	struct seen_members *s = arg;
	cr_assert_lt(s->n, 4);
	s->pids[s->n] = *pid;
	s->complete[s->n] = complete;
	s->n++;
	return 0;
}

Test(replica_msg, a_set_reads_back)
{
	erlang_pid home = sn_pid(NODE, 1, 0), r1 = sn_pid("b@h", 2, 0), r2 = sn_pid("c@h", 3, 1);
	const erlang_pid *reps[] = {&r1, &r2};
	bool complete[] = {true, false};
	ei_x_buff x;
	sn_x_new(&x);
	cr_assert_eq(replica_msg_encode_set(&x, 7, 1ull << 40, &home, reps, complete, 2), 0);
	struct replica_msg m;
	char *p;
	cr_assert_eq(decode_copy(&x, &m, &p), 1);
	cr_assert_eq(m.kind, RMSG_SET);
	cr_assert_eq(m.shard, 7);
	cr_assert_eq(m.epoch, 1ull << 40);
	cr_assert(term_pid_equal(&m.pid, &home));
	struct seen_members s = {0};
	cr_assert_eq(replica_msg_each_member(&m, see_member, &s), 0);
	cr_assert_eq(s.n, 2);
	cr_assert(term_pid_equal(&s.pids[0], &r1) && s.complete[0]);
	cr_assert(term_pid_equal(&s.pids[1], &r2) && !s.complete[1]);
	free(p);
	ei_x_free(&x);
}

Test(replica_msg, a_set_without_replicas_reads_back)
{
	erlang_pid home = sn_pid(NODE, 1, 0);
	ei_x_buff x;
	sn_x_new(&x);
	cr_assert_eq(replica_msg_encode_set(&x, 0, 1, &home, NULL, NULL, 0), 0);
	struct replica_msg m;
	char *p;
	cr_assert_eq(decode_copy(&x, &m, &p), 1);
	struct seen_members s = {0};
	cr_assert_eq(replica_msg_each_member(&m, see_member, &s), 0);
	cr_assert_eq(s.n, 0);
	free(p);
	ei_x_free(&x);
}

/* ---- writes ---- */

struct seen_writes {
	uint32_t shard[4];
	uint64_t epoch[4];
	uint64_t seq[4];
	char ids[4][32];
	size_t id_len[4];
	bool deleted[4];
	char states[4][32];
	size_t state_len[4];
	size_t n;
};

static int see_write(void *arg, uint32_t shard, uint64_t epoch, uint64_t seq, const char *id, size_t id_len,
		     const char *state, size_t state_len)
{
	struct seen_writes *s = arg;
	cr_assert_lt(s->n, 4);
	cr_assert_lt(id_len, 32);
	s->shard[s->n] = shard;
	s->epoch[s->n] = epoch;
	s->seq[s->n] = seq;
	memcpy(s->ids[s->n], id, id_len);
	s->id_len[s->n] = id_len;
	s->deleted[s->n] = state == NULL;
	if (state != NULL) {
		cr_assert_lt(state_len, 32);
		memcpy(s->states[s->n], state, state_len);
		s->state_len[s->n] = state_len;
	}
	s->n++;
	return 0;
}

/* The encoded term of `fmt`, with or without its version byte. */
static ei_x_buff term_of(const char *fmt, bool version)
{
	ei_x_buff x;
	if (version)
		sn_x_new_with_version(&x);
	else
		sn_x_new(&x);
	cr_assert_eq(ei_x_format_wo_ver(&x, fmt), 0);
	return x;
}

Test(replica_msg, writes_read_back_in_order)
{
	erlang_pid home = sn_pid(NODE, 1, 0);
	ei_x_buff id1 = term_of("42", false), id2 = term_of("{k, \"a\"}", false);
	ei_x_buff st = term_of("{counter, 10}", true);
	ei_x_buff x;
	sn_x_new(&x);
	struct replica_writes w;
	cr_assert_eq(replica_msg_writes_begin(&w, &x, &home), 0);
	cr_assert_eq(replica_msg_writes_add(&w, &x, 3, 9, 100, id1.buff, (size_t)id1.index, st.buff, (size_t)st.index), 0);
	cr_assert_eq(replica_msg_writes_add(&w, &x, 4000000000u, UINT64_MAX, 101, id2.buff, (size_t)id2.index, NULL, 0), 0);
	cr_assert_eq(replica_msg_writes_end(&w, &x), 0);
	struct replica_msg m;
	char *p;
	cr_assert_eq(decode_copy(&x, &m, &p), 1);
	cr_assert_eq(m.kind, RMSG_REPLICATE);
	cr_assert(term_pid_equal(&m.pid, &home));
	struct seen_writes s = {0};
	cr_assert_eq(replica_msg_each_write(&m, see_write, &s), 0);
	cr_assert_eq(s.n, 2);
	cr_assert(s.shard[0] == 3 && s.epoch[0] == 9);
	cr_assert(s.shard[1] == 4000000000u && s.epoch[1] == UINT64_MAX);
	cr_assert_eq(s.seq[0], 100);
	/* Ids come canonical (entity_id.h), as the stores key them. */
	ei_x_buff canon;
	sn_x_new(&canon);
	cr_assert_eq(entity_id_canonical(id1.buff, (size_t)id1.index, &canon), 0);
	cr_assert_eq(s.id_len[0], (size_t)canon.index);
	cr_assert_eq(memcmp(s.ids[0], canon.buff, s.id_len[0]), 0);
	ei_x_free(&canon);
	cr_assert(!s.deleted[0]);
	/* The state comes without its version byte. */
	cr_assert_eq(s.state_len[0], (size_t)st.index - 1);
	cr_assert_eq(memcmp(s.states[0], st.buff + 1, s.state_len[0]), 0);
	cr_assert_eq(s.seq[1], 101);
	cr_assert(s.deleted[1]);
	free(p);
	ei_x_free(&x);
	ei_x_free(&id1);
	ei_x_free(&id2);
	ei_x_free(&st);
}

/* A region keeps each stream's batch in an array that grows (realloc) when
 * a new region is heard of, which may come between a batch's writes and
 * its end. The message built across the move is whole: the end lands in
 * the batch where it is now (under ASan, a builder that kept the old
 * address is a use after free). */
Test(replica_msg, a_batch_that_moves_between_its_writes_and_its_end_is_whole)
{
	erlang_pid home = sn_pid(NODE, 1, 0);
	ei_x_buff id = term_of("2505", false), st = term_of("67", true);
	struct stream_like {
		ei_x_buff batch;
		struct replica_writes w;
	} *streams = malloc(sizeof *streams);
	cr_assert_not_null(streams);
	sn_x_new(&streams[0].batch);
	cr_assert_eq(replica_msg_writes_begin(&streams[0].w, &streams[0].batch, &home), 0);
	cr_assert_eq(replica_msg_writes_add(&streams[0].w, &streams[0].batch, 27, 204, 3687, id.buff,
					    (size_t)id.index, st.buff, (size_t)st.index), 0);
	struct stream_like *grown = malloc(8 * sizeof *grown); /* realloc, always moving */
	cr_assert_not_null(grown);
	memcpy(grown, streams, sizeof *streams);
	free(streams);
	streams = grown;
	cr_assert_eq(replica_msg_writes_end(&streams[0].w, &streams[0].batch), 0);
	struct replica_msg m;
	char *p;
	cr_assert_eq(decode_copy(&streams[0].batch, &m, &p), 1);
	struct seen_writes s = {0};
	cr_assert_eq(replica_msg_each_write(&m, see_write, &s), 0);
	cr_assert_eq(s.n, 1);
	cr_assert(s.shard[0] == 27 && s.epoch[0] == 204 && s.seq[0] == 3687);
	free(p);
	ei_x_free(&streams[0].batch);
	free(streams);
	ei_x_free(&id);
	ei_x_free(&st);
}

Test(replica_msg, no_writes_is_an_empty_list)
{
	erlang_pid home = sn_pid(NODE, 1, 0);
	ei_x_buff x;
	sn_x_new(&x);
	struct replica_writes w;
	cr_assert_eq(replica_msg_writes_begin(&w, &x, &home), 0);
	cr_assert_eq(replica_msg_writes_end(&w, &x), 0);
	struct replica_msg m;
	char *p;
	cr_assert_eq(decode_copy(&x, &m, &p), 1);
	struct seen_writes s = {0};
	cr_assert_eq(replica_msg_each_write(&m, see_write, &s), 0);
	cr_assert_eq(s.n, 0);
	free(p);
	ei_x_free(&x);
}

/* ---- the rest ---- */

Test(replica_msg, replies_fills_filled_and_held_read_back)
{
	erlang_pid pid = sn_pid(NODE, 5, 2);
	ei_x_buff x;
	struct replica_msg m;
	char *p;

	sn_x_new(&x);
	cr_assert_eq(replica_msg_encode_replicated(&x, 123456789012ull, &pid), 0);
	cr_assert_eq(decode_copy(&x, &m, &p), 1);
	cr_assert(m.kind == RMSG_REPLICATED && m.seq == 123456789012ull);
	cr_assert(term_pid_equal(&m.pid, &pid));
	free(p);
	ei_x_free(&x);

	sn_x_new(&x);
	cr_assert_eq(replica_msg_encode_reply(&x, RMSG_REFUSED, 11, 77, &pid), 0);
	cr_assert_eq(decode_copy(&x, &m, &p), 1);
	cr_assert(m.kind == RMSG_REFUSED && m.epoch == 77);
	free(p);
	ei_x_free(&x);

	sn_x_new(&x);
	cr_assert_eq(replica_msg_encode_reply(&x, RMSG_FILL_ACK, 11, 3, &pid), 0);
	cr_assert_eq(decode_copy(&x, &m, &p), 1);
	cr_assert(m.kind == RMSG_FILL_ACK && m.seq == 3);
	free(p);
	ei_x_free(&x);

	ei_x_buff recs = term_of("[{1, {c, 2}}, {k, v}]", false);
	sn_x_new(&x);
	cr_assert_eq(replica_msg_encode_fill(&x, 4, 8, 2, true, &pid, recs.buff, (size_t)recs.index), 0);
	cr_assert_eq(decode_copy(&x, &m, &p), 1);
	cr_assert(m.kind == RMSG_FILL && m.shard == 4 && m.epoch == 8 && m.seq == 2 && m.last);
	cr_assert_eq(m.list_len, (size_t)recs.index);
	cr_assert_eq(memcmp(m.list, recs.buff, m.list_len), 0);
	free(p);
	ei_x_free(&x);
	ei_x_free(&recs);

	sn_x_new(&x);
	cr_assert_eq(replica_msg_encode_filled(&x, 4, &pid), 0);
	cr_assert_eq(decode_copy(&x, &m, &p), 1);
	cr_assert(m.kind == RMSG_FILLED && m.shard == 4 && term_pid_equal(&m.pid, &pid));
	free(p);
	ei_x_free(&x);
}

struct seen_held {
	uint32_t shard[4];
	uint64_t epoch[4];
	enum replica_role_held role[4];
	char set_home[4][64];
	size_t n;
};

static int see_held(void *arg, uint32_t shard, uint64_t epoch, enum replica_role_held role, const char *set_home)
{
	struct seen_held *s = arg;
	cr_assert_lt(s->n, 4);
	s->shard[s->n] = shard;
	s->epoch[s->n] = epoch;
	s->role[s->n] = role;
	strlcpy(s->set_home[s->n], set_home ? set_home : "", sizeof s->set_home[0]);
	s->n++;
	return 0;
}

Test(replica_msg, held_reads_back)
{
	erlang_pid pid = sn_pid(NODE, 5, 2);
	uint32_t shards[] = {0, 17, 4000000000u};
	uint64_t epochs[] = {1, 2, UINT64_MAX};
	enum replica_role_held roles[] = {REPLICA_HELD_HOME, REPLICA_HELD_COMPLETE, REPLICA_HELD_FILLING};
	ei_x_buff x;
	sn_x_new(&x);
	cr_assert_eq(replica_msg_encode_held(&x, &pid, shards, epochs, roles, NULL, 3), 0);
	struct replica_msg m;
	char *p;
	cr_assert_eq(decode_copy(&x, &m, &p), 1);
	cr_assert_eq(m.kind, RMSG_HELD);
	struct seen_held s = {0};
	cr_assert_eq(replica_msg_each_held(&m, see_held, &s), 0);
	cr_assert_eq(s.n, 3);
	for (size_t k = 0; k < 3; k++)
		cr_assert(s.shard[k] == shards[k] && s.epoch[k] == epochs[k] && s.role[k] == roles[k] &&
				  s.set_home[k][0] == 0,
			  "entry %zu", k);
	free(p);
	ei_x_free(&x);
}

/* To a coordinator of protocol 2: a filling or absent copy names its set's
 * home; a home or a complete copy never does (it is that set's), and an
 * entry without one stays three elements, as protocol 1 reads it. */
Test(replica_msg, held_names_the_set_homes_of_filling_and_absent_copies)
{
	erlang_pid pid = sn_pid(NODE, 5, 2);
	uint32_t shards[] = {0, 1, 2, 3};
	uint64_t epochs[] = {7, 8, 9, 10};
	enum replica_role_held roles[] = {REPLICA_HELD_HOME, REPLICA_HELD_FILLING, REPLICA_HELD_NONE,
					  REPLICA_HELD_FILLING};
	const char *set_homes[] = {"ignored@h", "h2@127.0.0.1", "h3@127.0.0.1", NULL};
	ei_x_buff x;
	sn_x_new(&x);
	cr_assert_eq(replica_msg_encode_held(&x, &pid, shards, epochs, roles, set_homes, 4), 0);
	struct replica_msg m;
	char *p;
	cr_assert_eq(decode_copy(&x, &m, &p), 1);
	struct seen_held s = {0};
	cr_assert_eq(replica_msg_each_held(&m, see_held, &s), 0);
	cr_assert_eq(s.n, 4);
	cr_assert_str_eq(s.set_home[0], "");
	cr_assert_str_eq(s.set_home[1], "h2@127.0.0.1");
	cr_assert_str_eq(s.set_home[2], "h3@127.0.0.1");
	cr_assert_str_eq(s.set_home[3], "");
	cr_assert(s.role[1] == REPLICA_HELD_FILLING && s.role[2] == REPLICA_HELD_NONE && s.epoch[2] == 9);
	free(p);
	ei_x_free(&x);
}

Test(replica_msg, other_terms_are_not_replica_messages)
{
	cr_assert_eq(decode_fmt("{'$shardnode', register, 1}"), 0);
	cr_assert_eq(decode_fmt("{other, replicate, 1, 2, 3, []}"), 0);
	cr_assert_eq(decode_fmt("[1, 2]"), 0);
	cr_assert_eq(decode_fmt("{'$shardnode'}"), 0);
}

Test(replica_msg, malformed_ones_are_refused)
{
	/* Wrong arity, a shard that is not an integer, a list that is not
	 * one, a member that is not {Pid, Bool}, a role that is no role. */
	cr_assert_eq(decode_fmt("{'$shardnode', replicated, 1, 2, 3}"), -EPROTO);
	cr_assert_eq(decode_fmt("{'$shardnode', replicate, 1, []}"), -EPROTO);
	cr_assert_eq(decode_fmt("{'$shardnode', replica_filled, a, 2}"), -EPROTO);
	cr_assert_eq(decode_fmt("{'$shardnode', replica_set, 1, 2, 3, []}"), -EPROTO);
	cr_assert_eq(decode_fmt("{'$shardnode', replica_fill, 1, 2, 3, maybe, 4, []}"), -EPROTO);
	cr_assert_eq(decode_fmt("{'$shardnode', replicas_held, 1, [{1, 2, boss}]}"), -EPROTO);
	/* A home or complete copy naming a home, a home that is no node
	 * name, five elements. */
	cr_assert_eq(decode_fmt("{'$shardnode', replicas_held, 1, [{1, 2, home, 'h@x'}]}"), -EPROTO);
	cr_assert_eq(decode_fmt("{'$shardnode', replicas_held, 1, [{1, 2, complete, 'h@x'}]}"), -EPROTO);
	cr_assert_eq(decode_fmt("{'$shardnode', replicas_held, 1, [{1, 2, filling, \"h@x\"}]}"), -EPROTO);
	cr_assert_eq(decode_fmt("{'$shardnode', replicas_held, 1, [{1, 2, filling, nohost}]}"), -EPROTO);
	cr_assert_eq(decode_fmt("{'$shardnode', replicas_held, 1, [{1, 2, none, 'h@x', 3}]}"), -EPROTO);
	cr_assert_eq(decode_fmt("{'$shardnode', replica_fill_ack, -1, 2, 3}"), -EPROTO);
}

/* ---- truncated and corrupted encodings ---- */

static bool decode_if_valid(const char *buf, size_t len)
{
	char *p = sn_dup_exact(buf, len);
	size_t end = 0;
	bool valid = term_validate(p, len, &end) == 0 && end == len;
	if (valid) {
		struct replica_msg m;
		int rc = replica_msg_decode(p, len, &m);
		cr_assert(rc == 1 || rc == 0 || rc == -EPROTO, "rc %d", rc);
		if (rc == 1 && m.list != NULL) {
			cr_assert(m.list >= p && m.list + m.list_len <= p + len, "the list lies inside the term");
			/* A decoded message's walks never fail on its shape. */
			if (m.kind == RMSG_SET)
				cr_assert_eq(replica_msg_each_member(&m, NULL, NULL), 0);
			if (m.kind == RMSG_REPLICATE)
				cr_assert_eq(replica_msg_each_write(&m, NULL, NULL), 0);
			if (m.kind == RMSG_HELD)
				cr_assert_eq(replica_msg_each_held(&m, NULL, NULL), 0);
		}
	}
	free(p);
	return valid;
}

#define ALL_MSGS 5

static void encode_all(ei_x_buff msgs[ALL_MSGS])
{
	erlang_pid a = sn_pid(NODE, 1, 0), b = sn_pid("b@h", 2, 0);
	const erlang_pid *reps[] = {&b};
	bool complete[] = {true};
	for (size_t k = 0; k < ALL_MSGS; k++)
		sn_x_new(&msgs[k]);
	cr_assert_eq(replica_msg_encode_set(&msgs[0], 5, 300, &a, reps, complete, 1), 0);
	ei_x_buff id = term_of("{k, 1}", false), st = term_of("[1, 2]", true);
	struct replica_writes w;
	cr_assert_eq(replica_msg_writes_begin(&w, &msgs[1], &a), 0);
	cr_assert_eq(replica_msg_writes_add(&w, &msgs[1], 5, 300, 1000, id.buff, (size_t)id.index, st.buff, (size_t)st.index), 0);
	cr_assert_eq(replica_msg_writes_add(&w, &msgs[1], 6, 301, 1001, id.buff, (size_t)id.index, NULL, 0), 0);
	cr_assert_eq(replica_msg_writes_end(&w, &msgs[1]), 0);
	ei_x_buff recs = term_of("[{{k, 1}, 7}]", false);
	cr_assert_eq(replica_msg_encode_fill(&msgs[2], 5, 300, 1, false, &a, recs.buff, (size_t)recs.index), 0);
	cr_assert_eq(replica_msg_encode_replicated(&msgs[3], 1001, &b), 0);
	uint32_t shards[] = {5};
	uint64_t epochs[] = {300};
	enum replica_role_held roles[] = {REPLICA_HELD_FILLING};
	const char *set_homes[] = {"h@x"};
	cr_assert_eq(replica_msg_encode_held(&msgs[4], &b, shards, epochs, roles, set_homes, 1), 0);
	ei_x_free(&id);
	ei_x_free(&st);
	ei_x_free(&recs);
}

Test(replica_msg, every_truncation)
{
	ei_x_buff msgs[ALL_MSGS];
	encode_all(msgs);
	for (size_t k = 0; k < ALL_MSGS; k++) {
		size_t len = (size_t)msgs[k].index - 1, valid = 0;
		for (size_t n = 0; n <= len; n++)
			valid += decode_if_valid(msgs[k].buff + 1, n);
		cr_assert_eq(valid, 1, "message %zu: only the whole term validates", k);
		ei_x_free(&msgs[k]);
	}
}

Test(replica_msg, every_single_byte_change, .timeout = 60)
{
	ei_x_buff msgs[ALL_MSGS];
	encode_all(msgs);
	for (size_t k = 0; k < ALL_MSGS; k++) {
		size_t len = (size_t)msgs[k].index - 1;
		char *body = sn_dup_exact(msgs[k].buff + 1, len);
		for (size_t at = 0; at < len; at++) {
			char orig = body[at];
			for (int v = 0; v < 256; v++) {
				body[at] = (char)v;
				(void)decode_if_valid(body, len);
			}
			body[at] = orig;
		}
		free(body);
		ei_x_free(&msgs[k]);
	}
}
