/*
 * test_reply_batch.c — a turn's replies to one batching caller as one
 * message: which tags ask for it, what the message holds and in what
 * order, what leaves early or alone, and what is forgotten.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <ei.h>

#include "protocol/reply_batch.h"
#include "etf/term.h"
#include "etf/term_validate.h"
#include "unit_helpers.h"

#define NODE "caller@127.0.0.1"

/* What the send callback saw: every message, decoded back to its pid's
 * number and its replies. */
struct sent {
	int messages;
	unsigned to_num[8];
	long count[8];   /* replies in each message */
	long first[8];   /* the first reply's Seq and value */
	long first_value[8];
	long last[8];
};

static void on_send(void *arg, const erlang_pid *to, const char *msg, size_t len)
{
	struct sent *s = arg;
	size_t end = 0;
	char *copy = sn_dup_exact(msg + 1, len - 1);
	cr_assert_eq((unsigned char)msg[0], 131, "with version byte");
	cr_assert_eq(term_validate(copy, len - 1, &end), 0, "a whole valid term");
	cr_assert_eq(end, len - 1, "nothing after it");
	int i = 0, arity = 0, count = 0;
	char atom[MAXATOMLEN];
	cr_assert_eq(ei_decode_tuple_header(copy, &i, &arity), 0);
	cr_assert_eq(arity, 2);
	cr_assert_eq(ei_decode_atom(copy, &i, atom), 0);
	cr_assert_str_eq(atom, "$shardnode_replies");
	cr_assert_eq(ei_decode_list_header(copy, &i, &count), 0);
	int k = s->messages++;
	cr_assert_lt(k, 8);
	s->to_num[k] = to->num;
	s->count[k] = count;
	for (int e = 0; e < count; e++) {
		long seq, value;
		cr_assert_eq(ei_decode_tuple_header(copy, &i, &arity), 0);
		cr_assert_eq(arity, 2);
		cr_assert_eq(ei_decode_tuple_header(copy, &i, &arity), 0); /* the tag */
		cr_assert_eq(ei_decode_atom(copy, &i, atom), 0);
		cr_assert_eq(ei_decode_long(copy, &i, &seq), 0);
		value = -1;
		if (ei_decode_long(copy, &i, &value) != 0)
			cr_assert_eq(ei_skip_term(copy, &i), 0); /* not a number */
		if (e == 0) {
			s->first[k] = seq;
			s->first_value[k] = value;
		}
		s->last[k] = seq;
	}
	cr_assert_eq(ei_decode_list_header(copy, &i, &count), 0, "a proper list");
	cr_assert_eq(count, 0);
	free(copy);
}

static void encode_tag(ei_x_buff *x, const char *atom, long seq)
{
	sn_x_new(x);
	cr_assert_eq(ei_x_encode_tuple_header(x, 2), 0);
	cr_assert_eq(ei_x_encode_atom(x, atom), 0);
	cr_assert_eq(ei_x_encode_long(x, seq), 0);
}

static void add(struct reply_batches *b, const erlang_pid *to, long seq, long value)
{
	ei_x_buff tag, reply;
	encode_tag(&tag, "$shardnode_batched", seq);
	sn_x_new(&reply);
	cr_assert_eq(ei_x_encode_long(&reply, value), 0);
	cr_assert_eq(reply_batches_add(b, to, tag.buff, (size_t)tag.index, reply.buff, (size_t)reply.index), 0);
	ei_x_free(&tag);
	ei_x_free(&reply);
}

Test(reply_batch, only_a_batched_tuple_tag_asks_for_it)
{
	ei_x_buff x;
	encode_tag(&x, "$shardnode_batched", 7);
	char *copy = sn_dup_exact(x.buff, (size_t)x.index);
	cr_assert(reply_batch_tag(copy, (size_t)x.index));
	free(copy);
	ei_x_free(&x);

	encode_tag(&x, "$shardnode_batche", 7); /* one letter short */
	cr_assert_not(reply_batch_tag(x.buff, (size_t)x.index));
	ei_x_free(&x);

	/* a gen_server tag: a reference, or [alias | Ref] */
	sn_x_new(&x);
	erlang_ref ref = sn_ref(NODE, 5);
	cr_assert_eq(ei_x_encode_ref(&x, &ref), 0);
	cr_assert_not(reply_batch_tag(x.buff, (size_t)x.index));
	ei_x_free(&x);

	/* a 3-tuple starting with the atom */
	sn_x_new(&x);
	cr_assert_eq(ei_x_encode_tuple_header(&x, 3), 0);
	cr_assert_eq(ei_x_encode_atom(&x, "$shardnode_batched"), 0);
	cr_assert_eq(ei_x_encode_long(&x, 1), 0);
	cr_assert_eq(ei_x_encode_long(&x, 2), 0);
	cr_assert_not(reply_batch_tag(x.buff, (size_t)x.index));
	ei_x_free(&x);

	/* too short to hold anything: nothing read */
	cr_assert_not(reply_batch_tag("\x68\x02", 2));
}

Test(reply_batch, a_turns_replies_leave_as_one_message_in_order)
{
	struct sent s = {0};
	struct reply_batches b;
	reply_batches_init(&b, on_send, &s);
	erlang_pid a = sn_pid(NODE, 10, 0), c = sn_pid(NODE, 11, 0);
	for (long k = 0; k < 100; k++)
		add(&b, k % 2 ? &c : &a, k, k * 3);
	cr_assert_eq(s.messages, 0, "nothing leaves before the flush");
	reply_batches_flush(&b);
	cr_assert_eq(s.messages, 2, "one message per caller");
	cr_assert_eq(s.to_num[0], 10);
	cr_assert_eq(s.count[0], 50);
	cr_assert_eq(s.first[0], 0);
	cr_assert_eq(s.last[0], 98);
	cr_assert_eq(s.to_num[1], 11);
	cr_assert_eq(s.first[1], 1);
	cr_assert_eq(s.first_value[1], 3);
	cr_assert_eq(b.replies_batched, 100);
	cr_assert_eq(b.batches_sent, 2);

	/* The next turn starts empty: a flush with nothing sends nothing,
	 * and callers idle for a turn are forgotten. */
	reply_batches_flush(&b);
	cr_assert_eq(s.messages, 2);
	cr_assert_eq(b.ncallers, 0);
	add(&b, &a, 500, 1);
	reply_batches_flush(&b);
	cr_assert_eq(s.messages, 3);
	cr_assert_eq(s.count[2], 1);
	cr_assert_eq(s.first[2], 500);
	reply_batches_free(&b);
}

Test(reply_batch, a_full_batch_leaves_at_once)
{
	struct sent s = {0};
	struct reply_batches b;
	reply_batches_init(&b, on_send, &s);
	erlang_pid a = sn_pid(NODE, 10, 0);
	ei_x_buff tag, reply;
	encode_tag(&tag, "$shardnode_batched", 1);
	sn_x_new(&reply);
	char *big = calloc(1, REPLY_BATCH_BYTES_MAX / 2);
	cr_assert_eq(ei_x_encode_binary(&reply, big, REPLY_BATCH_BYTES_MAX / 2), 0);
	cr_assert_eq(reply_batches_add(&b, &a, tag.buff, (size_t)tag.index, reply.buff, (size_t)reply.index), 0);
	cr_assert_eq(s.messages, 0);
	cr_assert_eq(reply_batches_add(&b, &a, tag.buff, (size_t)tag.index, reply.buff, (size_t)reply.index), 0);
	cr_assert_eq(s.messages, 1, "over REPLY_BATCH_BYTES_MAX: sent without waiting for the flush");
	cr_assert_eq(s.count[0], 2);
	reply_batches_flush(&b);
	cr_assert_eq(s.messages, 1, "nothing was left for the flush");
	free(big);
	ei_x_free(&tag);
	ei_x_free(&reply);
	reply_batches_free(&b);
}

Test(reply_batch, callers_beyond_the_limit_are_answered_alone)
{
	struct sent s = {0};
	struct reply_batches b;
	reply_batches_init(&b, on_send, &s);
	ei_x_buff tag, reply;
	encode_tag(&tag, "$shardnode_batched", 1);
	sn_x_new(&reply);
	cr_assert_eq(ei_x_encode_atom(&reply, "ok"), 0);
	for (unsigned k = 0; k < REPLY_BATCH_CALLERS_MAX; k++) {
		erlang_pid p = sn_pid(NODE, 100 + k, 0);
		cr_assert_eq(reply_batches_add(&b, &p, tag.buff, (size_t)tag.index, reply.buff, (size_t)reply.index), 0);
	}
	erlang_pid one_more = sn_pid(NODE, 99, 0);
	cr_assert_eq(reply_batches_add(&b, &one_more, tag.buff, (size_t)tag.index, reply.buff, (size_t)reply.index),
		     -ENOSPC);
	/* a caller already batched still is */
	erlang_pid first = sn_pid(NODE, 100, 0);
	cr_assert_eq(reply_batches_add(&b, &first, tag.buff, (size_t)tag.index, reply.buff, (size_t)reply.index), 0);
	cr_assert_eq(b.replies_batched, REPLY_BATCH_CALLERS_MAX + 1);
	/* freed unsent: the sanitizers check nothing leaks */
	ei_x_free(&tag);
	ei_x_free(&reply);
	reply_batches_free(&b);
}
