/*
 * test_host_msg.c — the messages between a C node and the host of its
 * Erlang entities (host_msg.h): each encoder writes exactly the term the
 * host's side matches (built here with ei, byte for byte), whole and
 * valid; the decoder takes each message a C node is sent, every variant,
 * and refuses the malformed ones without touching what is not its own.
 */
#include <errno.h>
#include <string.h>

#include <criterion/criterion.h>
#include <ei.h>

#include "base/byteorder.h"
#include "etf/term.h"
#include "etf/term_validate.h"
#include "hosting/host_batch.h"
#include "hosting/host_msg.h"
#include "unit_helpers.h"

/* x holds one message, version byte first: it must be exactly `want`
 * (also with its version byte), and a whole valid term. */
static void assert_same(const ei_x_buff *x, const ei_x_buff *want)
{
	cr_assert_eq(x->index, want->index, "length %d, want %d", x->index, want->index);
	cr_assert_eq(memcmp(x->buff, want->buff, (size_t)x->index), 0);
	size_t end = 0;
	cr_assert_eq(term_validate(x->buff + 1, (size_t)x->index - 1, &end), 0);
	cr_assert_eq(end, (size_t)x->index - 1);
}

static void enc_raw_long(ei_x_buff *x, long v) { cr_assert_eq(ei_x_encode_long(x, v), 0); }

Test(host_msg, hello_lease_entity_and_stop_are_the_terms_the_host_matches)
{
	erlang_pid from = sn_pid("c1@127.0.0.1", 7, 0);
	ei_x_buff x, want;
	sn_x_new(&x);
	sn_x_new_with_version(&want);
	cr_assert_eq(host_msg_encode_hello(&x, "c1@127.0.0.1", &from), 0);
	cr_assert_eq(ei_x_encode_tuple_header(&want, 4) | ei_x_encode_atom(&want, "$shardnode_host") |
			     ei_x_encode_atom(&want, "hello") | ei_x_encode_atom(&want, "c1@127.0.0.1") |
			     ei_x_encode_pid(&want, &from),
		     0);
	assert_same(&x, &want);

	x.index = 0;
	want.index = 0;
	cr_assert_eq(ei_x_encode_version(&want), 0);
	cr_assert_eq(host_msg_encode_lease(&x, 4000000000u), 0);
	cr_assert_eq(ei_x_encode_tuple_header(&want, 3) | ei_x_encode_atom(&want, "$shardnode_host") |
			     ei_x_encode_atom(&want, "lease") | ei_x_encode_ulong(&want, 4000000000u),
		     0);
	assert_same(&x, &want);

	/* The message goes as its bytes: {'$shardnode_entity', Seq, {add, 1}}. */
	ei_x_buff msg;
	sn_x_new(&msg);
	cr_assert_eq(ei_x_encode_tuple_header(&msg, 2) | ei_x_encode_atom(&msg, "add"), 0);
	enc_raw_long(&msg, 1);
	x.index = 0;
	want.index = 0;
	cr_assert_eq(ei_x_encode_version(&want), 0);
	cr_assert_eq(host_msg_encode_entity(&x, UINT64_C(1) << 40, msg.buff, (size_t)msg.index), 0);
	cr_assert_eq(ei_x_encode_tuple_header(&want, 3) | ei_x_encode_atom(&want, "$shardnode_entity") |
			     ei_x_encode_ulonglong(&want, UINT64_C(1) << 40) |
			     ei_x_append_buf(&want, msg.buff, msg.index),
		     0);
	assert_same(&x, &want);

	x.index = 0;
	want.index = 0;
	cr_assert_eq(ei_x_encode_version(&want), 0);
	cr_assert_eq(host_msg_encode_stop(&x, "passivate"), 0);
	cr_assert_eq(ei_x_encode_tuple_header(&want, 2) | ei_x_encode_atom(&want, "$shardnode_stop") |
			     ei_x_encode_atom(&want, "passivate"),
		     0);
	assert_same(&x, &want);
	ei_x_free(&x);
	ei_x_free(&want);
	ei_x_free(&msg);
}

Test(host_msg, start_carries_the_stored_state_or_undefined)
{
	erlang_pid region = sn_pid("c1@127.0.0.1", 9, 0);
	ei_x_buff id, stored, msg;
	sn_x_new(&id);
	sn_x_new(&stored);
	sn_x_new(&msg);
	cr_assert_eq(ei_x_encode_binary(&id, "cart-1", 6), 0);
	cr_assert_eq(ei_x_encode_map_header(&stored, 1) | ei_x_encode_atom(&stored, "apple"), 0);
	enc_raw_long(&stored, 2);
	cr_assert_eq(ei_x_encode_atom(&msg, "items"), 0);
	for (int with_state = 0; with_state < 2; with_state++) {
		ei_x_buff x, want;
		sn_x_new(&x);
		sn_x_new_with_version(&want);
		cr_assert_eq(host_msg_encode_start(&x, &region, "cart", id.buff, (size_t)id.index,
						   with_state ? stored.buff : NULL, (size_t)stored.index, 3, msg.buff,
						   (size_t)msg.index),
			     0);
		cr_assert_eq(ei_x_encode_tuple_header(&want, 8) | ei_x_encode_atom(&want, "$shardnode_host") |
				     ei_x_encode_atom(&want, "start") | ei_x_encode_pid(&want, &region) |
				     ei_x_encode_atom(&want, "cart") | ei_x_append_buf(&want, id.buff, id.index),
			     0);
		if (with_state)
			cr_assert_eq(ei_x_append_buf(&want, stored.buff, stored.index), 0);
		else
			cr_assert_eq(ei_x_encode_atom(&want, "undefined"), 0);
		cr_assert_eq(ei_x_encode_ulonglong(&want, 3) | ei_x_append_buf(&want, msg.buff, msg.index), 0);
		assert_same(&x, &want);
		ei_x_free(&x);
		ei_x_free(&want);
	}
	ei_x_free(&id);
	ei_x_free(&stored);
	ei_x_free(&msg);
}

/* Decodes x (no version byte) from an exact heap copy, after
 * term_validate as the node does. The spans in *m point into the copy,
 * which the caller frees (*t). */
static int decode(const ei_x_buff *x, struct host_msg *m, char **t)
{
	*t = sn_dup_exact(x->buff, (size_t)x->index);
	size_t end = 0;
	cr_assert_eq(term_validate(*t, (size_t)x->index, &end), 0);
	cr_assert_eq(end, (size_t)x->index);
	return host_msg_decode(*t, (size_t)x->index, m);
}

/* decode, for a result whose spans are not looked at. */
static int decode_rc(const ei_x_buff *x, struct host_msg *m)
{
	char *t;
	int rc = decode(x, m, &t);
	free(t);
	return rc;
}

static void expect_span(const char *p, size_t n, const ei_x_buff *want)
{
	cr_assert_not_null(p);
	cr_assert_eq(n, (size_t)want->index);
	cr_assert_eq(memcmp(p, want->buff, n), 0);
}

static void done_msg(ei_x_buff *x, const erlang_pid *pid, long long seq, const char *change, const char *next)
{
	cr_assert_eq(ei_x_encode_tuple_header(x, 7) | ei_x_encode_atom(x, "$shardnode_done") |
			     ei_x_encode_binary(x, "c1", 2) | ei_x_encode_pid(x, pid) | ei_x_encode_longlong(x, seq) |
			     ei_x_encode_atom(x, "ok"),
		     0);
	if (strcmp(change, "state") == 0)
		cr_assert_eq(ei_x_encode_tuple_header(x, 2) | ei_x_encode_atom(x, "state") | ei_x_encode_long(x, 42), 0);
	else
		cr_assert_eq(ei_x_encode_atom(x, change), 0);
	cr_assert_eq(ei_x_encode_atom(x, next), 0);
}

Test(host_msg, a_completion_with_and_without_a_new_state)
{
	erlang_pid pid = sn_pid("host@127.0.0.1", 77, 1);
	ei_x_buff x, id, reply, state;
	sn_x_new(&id);
	sn_x_new(&reply);
	sn_x_new(&state);
	cr_assert_eq(ei_x_encode_binary(&id, "c1", 2) | ei_x_encode_atom(&reply, "ok") | ei_x_encode_long(&state, 42), 0);
	struct host_msg m;
	char *t;

	sn_x_new(&x);
	done_msg(&x, &pid, 5, "unchanged", "continue");
	cr_assert_eq(decode(&x, &m, &t), 1);
	cr_assert_eq(m.kind, HOST_MSG_DONE);
	cr_assert(m.has_pid && term_pid_equal(&m.pid, &pid));
	cr_assert_eq(m.seq, 5u);
	expect_span(m.id, m.id_len, &id);
	expect_span(m.reply, m.reply_len, &reply);
	cr_assert_null(m.state);
	cr_assert_not(m.stop);
	free(t);

	x.index = 0;
	done_msg(&x, &pid, 6, "state", "stop");
	cr_assert_eq(decode(&x, &m, &t), 1);
	expect_span(m.state, m.state_len, &state);
	cr_assert(m.stop);
	cr_assert_eq(m.seq, 6u);
	free(t);
	ei_x_free(&x);
	ei_x_free(&id);
	ei_x_free(&reply);
	ei_x_free(&state);
}

/* A region's batch decoded in one walk (host_msg_batch_decode_next):
 * each message as host_msg_decode gives it alone, its length `used`; one
 * that is malformed, foreign or itself a batch is reported so and stepped
 * over, and the next one is read whole. */
Test(host_msg, a_batch_decoded_in_one_walk_steps_over_what_it_cannot_read)
{
	erlang_pid pid = sn_pid("host@127.0.0.1", 77, 1);
	ei_x_buff x, lone;
	sn_x_new(&x);
	sn_x_new(&lone);
	cr_assert_eq(ei_x_encode_tuple_header(&x, 2) | ei_x_encode_atom(&x, "$shardnode_batch") |
			     ei_x_encode_list_header(&x, 6),
		     0);
	done_msg(&x, &pid, 5, "unchanged", "continue");
	/* a done of five elements, a foreign atom, a batch inside */
	cr_assert_eq(ei_x_encode_tuple_header(&x, 5) | ei_x_encode_atom(&x, "$shardnode_done") |
			     ei_x_encode_binary(&x, "c1", 2) | ei_x_encode_pid(&x, &pid) | ei_x_encode_long(&x, 9) |
			     ei_x_encode_atom(&x, "ok"),
		     0);
	cr_assert_eq(ei_x_encode_atom(&x, "hello"), 0);
	cr_assert_eq(ei_x_encode_tuple_header(&x, 2) | ei_x_encode_atom(&x, "$shardnode_batch") |
			     ei_x_encode_empty_list(&x),
		     0);
	cr_assert_eq(ei_x_encode_tuple_header(&x, 4) | ei_x_encode_atom(&x, "$shardnode_crashed") |
			     ei_x_encode_binary(&x, "c2", 2) | ei_x_encode_atom(&x, "undefined") |
			     ei_x_encode_atom(&x, "boom"),
		     0);
	done_msg(&x, &pid, 6, "state", "stop");
	cr_assert_eq(ei_x_encode_empty_list(&x), 0);
	struct host_msg m, each;
	char *t;
	cr_assert_eq(decode(&x, &m, &t), 1);
	cr_assert_eq(m.kind, HOST_MSG_BATCH);
	struct host_msg_batch b;
	int rc;
	host_msg_batch_begin(&b, m.items, m.items_len);
	cr_assert(host_msg_batch_decode_next(&b, &each, &rc));
	cr_assert_eq(rc, 1);
	cr_assert_eq(each.kind, HOST_MSG_DONE);
	cr_assert_eq(each.seq, 5u);
	done_msg(&lone, &pid, 5, "unchanged", "continue");
	cr_assert_eq(each.used, (size_t)lone.index, "used is the message's length");
	cr_assert(host_msg_batch_decode_next(&b, &each, &rc));
	cr_assert_eq(rc, -EPROTO);
	cr_assert(host_msg_batch_decode_next(&b, &each, &rc));
	cr_assert_eq(rc, 0);
	cr_assert(host_msg_batch_decode_next(&b, &each, &rc));
	cr_assert_eq(rc, -EPROTO, "no batch inside a batch");
	cr_assert(host_msg_batch_decode_next(&b, &each, &rc));
	cr_assert_eq(rc, 1);
	cr_assert_eq(each.kind, HOST_MSG_CRASHED);
	cr_assert_not(each.has_pid);
	cr_assert(host_msg_batch_decode_next(&b, &each, &rc));
	cr_assert_eq(rc, 1);
	cr_assert_eq(each.kind, HOST_MSG_DONE);
	cr_assert_eq(each.seq, 6u);
	cr_assert(each.stop);
	cr_assert_not(host_msg_batch_decode_next(&b, &each, &rc));
	cr_assert_eq(b.at, m.items_len - 1, "everything read but the list's tail");
	free(t);
	ei_x_free(&x);
	ei_x_free(&lone);
}

/* What the C node's batch items rest on: a pid as ei_encode_pid writes it
 * ends in its number, serial and creation, 4 bytes each, big-endian, so a
 * head encoded once with the host's name takes any of its pids. */
Test(host_msg, a_pid_is_its_nodes_head_and_twelve_bytes)
{
	erlang_pid entity = sn_pid("host@127.0.0.1", 0x01020304, 7), any = sn_pid("host@127.0.0.1", 0, 0);
	entity.serial = 0x0a0b0c0d;
	entity.creation = 0x11223344;
	ei_x_buff want, head;
	sn_x_new(&want);
	sn_x_new(&head);
	cr_assert_eq(ei_x_encode_pid(&want, &entity) | ei_x_encode_pid(&head, &any), 0);
	cr_assert_eq(head.index, want.index);
	cr_assert_eq(memcmp(head.buff, want.buff, (size_t)head.index - 12), 0, "the head is the node's alone");
	be32_write(head.buff + head.index - 12, entity.num);
	be32_write(head.buff + head.index - 8, entity.serial);
	be32_write(head.buff + head.index - 4, entity.creation);
	cr_assert_eq(memcmp(head.buff, want.buff, (size_t)want.index), 0);
	ei_x_free(&want);
	ei_x_free(&head);
}

Test(host_msg, a_crash_names_its_entity_and_reason)
{
	erlang_pid pid = sn_pid("host@127.0.0.1", 78, 0);
	for (int with_pid = 0; with_pid < 2; with_pid++) {
		ei_x_buff x, reason;
		sn_x_new(&x);
		sn_x_new(&reason);
		cr_assert_eq(ei_x_encode_tuple_header(&reason, 2) | ei_x_encode_atom(&reason, "unknown_type") |
				     ei_x_encode_atom(&reason, "cart"),
			     0);
		cr_assert_eq(ei_x_encode_tuple_header(&x, 4) | ei_x_encode_atom(&x, "$shardnode_crashed") |
				     ei_x_encode_binary(&x, "c1", 2),
			     0);
		if (with_pid)
			cr_assert_eq(ei_x_encode_pid(&x, &pid), 0);
		else
			cr_assert_eq(ei_x_encode_atom(&x, "undefined"), 0);
		cr_assert_eq(ei_x_append_buf(&x, reason.buff, reason.index), 0);
		struct host_msg m;
		char *t;
		cr_assert_eq(decode(&x, &m, &t), 1);
		cr_assert_eq(m.kind, HOST_MSG_CRASHED);
		cr_assert_eq(m.has_pid, with_pid == 1);
		expect_span(m.reply, m.reply_len, &reason);
		free(t);
		ei_x_free(&x);
		ei_x_free(&reason);
	}
}

Test(host_msg, welcome_and_types_carry_the_list)
{
	erlang_pid d = sn_pid("host@127.0.0.1", 80, 0);
	for (int n = 0; n < 3; n++) {
		ei_x_buff x, list;
		sn_x_new(&x);
		sn_x_new(&list);
		if (n > 0)
			cr_assert_eq(ei_x_encode_list_header(&list, n), 0);
		for (int k = 0; k < n; k++)
			cr_assert_eq(ei_x_encode_atom(&list, k ? "cart" : "order"), 0);
		cr_assert_eq(ei_x_encode_empty_list(&list), 0);
		cr_assert_eq(ei_x_encode_tuple_header(&x, 4) | ei_x_encode_atom(&x, "$shardnode_host") |
				     ei_x_encode_atom(&x, "welcome") | ei_x_encode_pid(&x, &d) |
				     ei_x_append_buf(&x, list.buff, list.index),
			     0);
		struct host_msg m;
		char *t;
		cr_assert_eq(decode(&x, &m, &t), 1);
		cr_assert_eq(m.kind, HOST_MSG_WELCOME);
		cr_assert(term_pid_equal(&m.pid, &d));
		expect_span(m.types, m.types_len, &list);
		free(t);
		x.index = 0;
		cr_assert_eq(ei_x_encode_tuple_header(&x, 3) | ei_x_encode_atom(&x, "$shardnode_host") |
				     ei_x_encode_atom(&x, "types") | ei_x_append_buf(&x, list.buff, list.index),
			     0);
		cr_assert_eq(decode(&x, &m, &t), 1);
		cr_assert_eq(m.kind, HOST_MSG_TYPES);
		expect_span(m.types, m.types_len, &list);
		free(t);
		ei_x_free(&x);
		ei_x_free(&list);
	}
}

Test(host_msg, what_is_not_its_own_is_left_alone)
{
	ei_x_buff x;
	sn_x_new(&x);
	struct host_msg m;
	cr_assert_eq(ei_x_encode_atom(&x, "hello"), 0);
	cr_assert_eq(decode_rc(&x, &m), 0, "not a tuple");
	x.index = 0;
	cr_assert_eq(ei_x_encode_tuple_header(&x, 3) | ei_x_encode_atom(&x, "$shardnode") |
			     ei_x_encode_atom(&x, "registered") | ei_x_encode_atom(&x, "x"),
		     0);
	cr_assert_eq(decode_rc(&x, &m), 0, "the region's own protocol");
	x.index = 0;
	cr_assert_eq(ei_x_encode_tuple_header(&x, 2) | ei_x_encode_long(&x, 1) | ei_x_encode_atom(&x, "incr"), 0);
	cr_assert_eq(decode_rc(&x, &m), 0, "an entity message");
	x.index = 0;
	cr_assert_eq(ei_x_encode_tuple_header(&x, 0), 0);
	cr_assert_eq(decode_rc(&x, &m), 0, "{}");
	ei_x_free(&x);
}

Test(host_msg, malformed_messages_of_its_own_are_refused)
{
	erlang_pid pid = sn_pid("host@127.0.0.1", 1, 0);
	struct host_msg m;
	ei_x_buff x;
	sn_x_new(&x);
	/* A sequence number that is negative, or no integer. */
	done_msg(&x, &pid, -1, "unchanged", "continue");
	cr_assert_eq(decode_rc(&x, &m), -EPROTO);
	/* A change that is neither unchanged nor {state, New}. */
	x.index = 0;
	done_msg(&x, &pid, 1, "changed", "continue");
	cr_assert_eq(decode_rc(&x, &m), -EPROTO);
	/* A next that is neither continue nor stop. */
	x.index = 0;
	done_msg(&x, &pid, 1, "unchanged", "maybe");
	cr_assert_eq(decode_rc(&x, &m), -EPROTO);
	/* No pid where the entity's goes. */
	x.index = 0;
	cr_assert_eq(ei_x_encode_tuple_header(&x, 7) | ei_x_encode_atom(&x, "$shardnode_done") |
			     ei_x_encode_long(&x, 1) | ei_x_encode_atom(&x, "nopid") | ei_x_encode_long(&x, 1) |
			     ei_x_encode_atom(&x, "ok") | ei_x_encode_atom(&x, "unchanged") |
			     ei_x_encode_atom(&x, "continue"),
		     0);
	cr_assert_eq(decode_rc(&x, &m), -EPROTO);
	/* Wrong arities. */
	x.index = 0;
	cr_assert_eq(ei_x_encode_tuple_header(&x, 2) | ei_x_encode_atom(&x, "$shardnode_done") | ei_x_encode_long(&x, 1), 0);
	cr_assert_eq(decode_rc(&x, &m), -EPROTO);
	x.index = 0;
	cr_assert_eq(ei_x_encode_tuple_header(&x, 1) | ei_x_encode_atom(&x, "$shardnode_host"), 0);
	cr_assert_eq(decode_rc(&x, &m), -EPROTO);
	x.index = 0;
	cr_assert_eq(ei_x_encode_tuple_header(&x, 3) | ei_x_encode_atom(&x, "$shardnode_crashed") |
			     ei_x_encode_long(&x, 1) | ei_x_encode_atom(&x, "undefined"),
		     0);
	cr_assert_eq(decode_rc(&x, &m), -EPROTO);
	/* Types that are no list; a welcome without a dispatcher. */
	x.index = 0;
	cr_assert_eq(ei_x_encode_tuple_header(&x, 3) | ei_x_encode_atom(&x, "$shardnode_host") |
			     ei_x_encode_atom(&x, "types") | ei_x_encode_atom(&x, "cart"),
		     0);
	cr_assert_eq(decode_rc(&x, &m), -EPROTO);
	x.index = 0;
	cr_assert_eq(ei_x_encode_tuple_header(&x, 4) | ei_x_encode_atom(&x, "$shardnode_host") |
			     ei_x_encode_atom(&x, "welcome") | ei_x_encode_atom(&x, "d") | ei_x_encode_empty_list(&x),
		     0);
	cr_assert_eq(decode_rc(&x, &m), -EPROTO);
	/* The C node's own messages, sent back to it. */
	x.index = 0;
	cr_assert_eq(ei_x_encode_tuple_header(&x, 3) | ei_x_encode_atom(&x, "$shardnode_host") |
			     ei_x_encode_atom(&x, "lease") | ei_x_encode_long(&x, 5),
		     0);
	cr_assert_eq(decode_rc(&x, &m), -EPROTO);
	ei_x_free(&x);
}

Test(host_msg, end_lists_the_processes_and_stopped_returns_the_token)
{
	erlang_pid region = sn_pid("c1@127.0.0.1", 5, 0);
	erlang_pid pids[2] = {sn_pid("host@127.0.0.1", 10, 0), sn_pid("host@127.0.0.1", 11, 0)};
	for (size_t n = 0; n <= 2; n++) {
		ei_x_buff x, want;
		sn_x_new(&x);
		sn_x_new(&want);
		cr_assert_eq(host_msg_encode_end(&x, &region, 7, pids, n), 0);
		cr_assert_eq(ei_x_encode_version(&want) | ei_x_encode_tuple_header(&want, 5) |
				     ei_x_encode_atom(&want, "$shardnode_host") | ei_x_encode_atom(&want, "end") |
				     ei_x_encode_pid(&want, &region) | ei_x_encode_long(&want, 7),
			     0);
		if (n > 0)
			cr_assert_eq(ei_x_encode_list_header(&want, (long)n), 0);
		for (size_t k = 0; k < n; k++)
			cr_assert_eq(ei_x_encode_pid(&want, &pids[k]), 0);
		cr_assert_eq(ei_x_encode_empty_list(&want), 0);
		assert_same(&x, &want);
		ei_x_free(&x);
		ei_x_free(&want);
	}
	ei_x_buff x;
	sn_x_new(&x);
	struct host_msg m;
	char *t;
	cr_assert_eq(ei_x_encode_tuple_header(&x, 2) | ei_x_encode_atom(&x, "$shardnode_stopped") |
			     ei_x_encode_long(&x, 7),
		     0);
	cr_assert_eq(decode(&x, &m, &t), 1);
	cr_assert_eq(m.kind, HOST_MSG_ENDED);
	cr_assert_eq(m.seq, 7);
	free(t);
	/* A token that is no shard number, a wrong arity. */
	x.index = 0;
	cr_assert_eq(ei_x_encode_tuple_header(&x, 2) | ei_x_encode_atom(&x, "$shardnode_stopped") |
			     ei_x_encode_atom(&x, "seven"),
		     0);
	cr_assert_eq(decode_rc(&x, &m), -EPROTO);
	x.index = 0;
	cr_assert_eq(ei_x_encode_tuple_header(&x, 3) | ei_x_encode_atom(&x, "$shardnode_stopped") |
			     ei_x_encode_long(&x, 7) | ei_x_encode_long(&x, 7),
		     0);
	cr_assert_eq(decode_rc(&x, &m), -EPROTO);
	ei_x_free(&x);
}

/* A batch for the dispatcher, through host_batch as the host link builds
 * it: exactly {'$shardnode_host', batch, [Item]} with each item the term
 * the dispatcher matches, in order; an item cut off leaves the batch as
 * it was; a batch taken starts the next one empty. */
Test(host_msg, a_batch_holds_its_items_in_order_and_a_failed_one_leaves_no_trace)
{
	erlang_pid entity = sn_pid("host@127.0.0.1", 9, 0), region = sn_pid("c1@127.0.0.1", 3, 0);
	ei_x_buff msg, id, pid, want;
	sn_x_new(&msg);
	sn_x_new(&id);
	sn_x_new(&pid);
	cr_assert_eq(ei_x_encode_tuple_header(&msg, 2) | ei_x_encode_atom(&msg, "add") | ei_x_encode_long(&msg, 1), 0);
	cr_assert_eq(ei_x_encode_binary(&id, "c1", 2) | ei_x_encode_pid(&pid, &entity), 0);

	struct host_batch b;
	host_batch_init(&b);
	const char *buf;
	size_t len;
	cr_assert_eq(host_batch_take(&b, &buf, &len), 0, "an empty batch is not sent");
	ei_x_buff *x = host_batch_item_begin(&b);
	cr_assert_not_null(x);
	host_batch_item_end(&b, host_msg_encode_item_entity(x, pid.buff, (size_t)pid.index, 7, msg.buff,
							    (size_t)msg.index) == 0);
	x = host_batch_item_begin(&b);
	int mark = x->index;
	cr_assert_eq(ei_x_encode_atom(x, "half an item"), 0);
	host_batch_item_end(&b, false);
	cr_assert_eq(x->index, mark, "cut back");
	x = host_batch_item_begin(&b);
	host_batch_item_end(&b, host_msg_encode_item_start(x, &region, "cart", id.buff, (size_t)id.index, NULL, 0, 8,
							   msg.buff, (size_t)msg.index) == 0);
	x = host_batch_item_begin(&b);
	host_batch_item_end(&b, host_msg_encode_item_stop(x, &entity, "passivate") == 0);
	cr_assert_eq(host_batch_take(&b, &buf, &len), 1);

	sn_x_new_with_version(&want);
	cr_assert_eq(ei_x_encode_tuple_header(&want, 3) | ei_x_encode_atom(&want, "$shardnode_host") |
			     ei_x_encode_atom(&want, "batch") | ei_x_encode_list_header(&want, 3),
		     0);
	cr_assert_eq(ei_x_encode_tuple_header(&want, 3) | ei_x_encode_pid(&want, &entity) | ei_x_encode_long(&want, 7) |
			     ei_x_append_buf(&want, msg.buff, msg.index),
		     0);
	cr_assert_eq(ei_x_encode_tuple_header(&want, 7) | ei_x_encode_atom(&want, "start") |
			     ei_x_encode_pid(&want, &region) | ei_x_encode_atom(&want, "cart") |
			     ei_x_append_buf(&want, id.buff, id.index) | ei_x_encode_atom(&want, "undefined") |
			     ei_x_encode_long(&want, 8) | ei_x_append_buf(&want, msg.buff, msg.index),
		     0);
	cr_assert_eq(ei_x_encode_tuple_header(&want, 3) | ei_x_encode_atom(&want, "stop") |
			     ei_x_encode_pid(&want, &entity) | ei_x_encode_atom(&want, "passivate") |
			     ei_x_encode_empty_list(&want),
		     0);
	ei_x_buff got = {.buff = (char *)buf, .buffsz = (int)len, .index = (int)len};
	assert_same(&got, &want);

	/* The next batch starts empty: one item, alone in it. */
	x = host_batch_item_begin(&b);
	host_batch_item_end(&b, host_msg_encode_item_stop(x, &entity, "moved") == 0);
	cr_assert_eq(host_batch_take(&b, &buf, &len), 1);
	want.index = 0;
	cr_assert_eq(ei_x_encode_version(&want) | ei_x_encode_tuple_header(&want, 3) |
			     ei_x_encode_atom(&want, "$shardnode_host") | ei_x_encode_atom(&want, "batch") |
			     ei_x_encode_list_header(&want, 1) | ei_x_encode_tuple_header(&want, 3) |
			     ei_x_encode_atom(&want, "stop") | ei_x_encode_pid(&want, &entity) |
			     ei_x_encode_atom(&want, "moved") | ei_x_encode_empty_list(&want),
		     0);
	got = (ei_x_buff){.buff = (char *)buf, .buffsz = (int)len, .index = (int)len};
	assert_same(&got, &want);
	host_batch_free(&b);
	ei_x_free(&want);
	ei_x_free(&msg);
	ei_x_free(&id);
	ei_x_free(&pid);
}

/* The host's offer of batches, and a batch for a region: its messages
 * given one by one, in order, each decoded as it would be alone; an
 * empty batch gives none; a batch that is no list is refused. */
Test(host_msg, a_regions_batch_gives_its_messages_in_order)
{
	erlang_pid pid = sn_pid("host@127.0.0.1", 77, 1);
	ei_x_buff x;
	struct host_msg m;
	char *t;
	sn_x_new(&x);
	cr_assert_eq(ei_x_encode_tuple_header(&x, 3) | ei_x_encode_atom(&x, "$shardnode_host") |
			     ei_x_encode_atom(&x, "batches") | ei_x_encode_pid(&x, &pid),
		     0);
	cr_assert_eq(decode(&x, &m, &t), 1);
	cr_assert_eq(m.kind, HOST_MSG_BATCHES);
	cr_assert(m.has_pid && term_pid_equal(&m.pid, &pid));
	free(t);

	x.index = 0;
	cr_assert_eq(ei_x_encode_tuple_header(&x, 2) | ei_x_encode_atom(&x, "$shardnode_batch") |
			     ei_x_encode_list_header(&x, 3),
		     0);
	done_msg(&x, &pid, 5, "unchanged", "continue");
	cr_assert_eq(ei_x_encode_tuple_header(&x, 2) | ei_x_encode_atom(&x, "$shardnode_stopped") |
			     ei_x_encode_long(&x, 3),
		     0);
	done_msg(&x, &pid, 6, "state", "stop");
	cr_assert_eq(ei_x_encode_empty_list(&x), 0);
	cr_assert_eq(decode(&x, &m, &t), 1);
	cr_assert_eq(m.kind, HOST_MSG_BATCH);
	struct host_msg_batch b;
	host_msg_batch_begin(&b, m.items, m.items_len);
	struct host_msg each;
	int rc;
	cr_assert(host_msg_batch_decode_next(&b, &each, &rc));
	cr_assert_eq(rc, 1);
	cr_assert_eq(each.kind, HOST_MSG_DONE);
	cr_assert_eq(each.seq, 5u);
	cr_assert(host_msg_batch_decode_next(&b, &each, &rc));
	cr_assert_eq(rc, 1);
	cr_assert_eq(each.kind, HOST_MSG_ENDED);
	cr_assert_eq(each.seq, 3u);
	cr_assert(host_msg_batch_decode_next(&b, &each, &rc));
	cr_assert_eq(rc, 1);
	cr_assert_eq(each.kind, HOST_MSG_DONE);
	cr_assert_eq(each.seq, 6u);
	cr_assert(each.stop);
	cr_assert_eq(b.at, m.items_len - 1, "the last ends before the list's tail");
	cr_assert_not(host_msg_batch_decode_next(&b, &each, &rc));
	free(t);

	x.index = 0;
	cr_assert_eq(ei_x_encode_tuple_header(&x, 2) | ei_x_encode_atom(&x, "$shardnode_batch") |
			     ei_x_encode_empty_list(&x),
		     0);
	cr_assert_eq(decode(&x, &m, &t), 1);
	host_msg_batch_begin(&b, m.items, m.items_len);
	cr_assert_not(host_msg_batch_decode_next(&b, &each, &rc));
	free(t);

	x.index = 0;
	cr_assert_eq(ei_x_encode_tuple_header(&x, 2) | ei_x_encode_atom(&x, "$shardnode_batch") |
			     ei_x_encode_atom(&x, "none"),
		     0);
	cr_assert_eq(decode_rc(&x, &m), -EPROTO);
	ei_x_free(&x);
}
