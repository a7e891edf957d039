/*
 * test_shardnode_msg.c — the '$shardnode' head: what is written, and what
 * is recognised as one (and what is not).
 */
#include <string.h>

#include <criterion/criterion.h>
#include <ei.h>

#include "etf/shardnode_msg.h"
#include "etf/term.h"
#include "unit_helpers.h"

Test(shardnode_msg, begin_writes_the_head_binary_to_term_reads)
{
	ei_x_buff x;
	sn_x_new(&x);
	cr_assert_eq(shardnode_msg_begin(&x, 3, "gossip"), 0);
	cr_assert_eq(ei_x_encode_long(&x, 7), 0);
	int i = 0, arity;
	char atom[MAXATOMLEN_UTF8];
	long v;
	cr_assert_eq(ei_decode_tuple_header(x.buff, &i, &arity), 0);
	cr_assert_eq(arity, 3);
	cr_assert_eq(ei_decode_atom(x.buff, &i, atom), 0);
	cr_assert_str_eq(atom, "$shardnode");
	cr_assert_eq(ei_decode_atom(x.buff, &i, atom), 0);
	cr_assert_str_eq(atom, "gossip");
	cr_assert_eq(ei_decode_long(x.buff, &i, &v), 0);
	cr_assert_eq(v, 7);
	cr_assert_eq(i, x.index);

	size_t idx;
	long a;
	cr_assert(shardnode_msg_head(x.buff, &idx, &a));
	cr_assert_eq(a, 3);
	cr_assert(term_is_atom(x.buff, idx, "gossip"), "idx is at the kind");
	ei_x_free(&x);
}

Test(shardnode_msg, other_terms_are_not_ours)
{
	ei_x_buff x;
	size_t idx;
	long a;

	sn_x_new(&x); /* {'$shardnodes', gossip}: a near miss */
	ei_x_encode_tuple_header(&x, 2);
	ei_x_encode_atom(&x, "$shardnodes");
	ei_x_encode_atom(&x, "gossip");
	cr_assert_not(shardnode_msg_head(x.buff, &idx, &a));
	ei_x_free(&x);

	sn_x_new(&x); /* ['$shardnode', gossip]: not a tuple */
	ei_x_encode_list_header(&x, 2);
	ei_x_encode_atom(&x, "$shardnode");
	ei_x_encode_atom(&x, "gossip");
	ei_x_encode_empty_list(&x);
	cr_assert_not(shardnode_msg_head(x.buff, &idx, &a));
	ei_x_free(&x);

	sn_x_new(&x); /* {}: no first element */
	ei_x_encode_tuple_header(&x, 0);
	cr_assert_not(shardnode_msg_head(x.buff, &idx, &a));
	ei_x_free(&x);

	sn_x_new(&x); /* {'$shardnode'}: ours, with no kind; the caller checks the arity */
	ei_x_encode_tuple_header(&x, 1);
	ei_x_encode_atom(&x, "$shardnode");
	cr_assert(shardnode_msg_head(x.buff, &idx, &a));
	cr_assert_eq(a, 1);
	cr_assert_eq(idx, (size_t)x.index);
	ei_x_free(&x);
}

/* ---- shardnode_msg_classify: one look at a region's message ---- */

static enum shardnode_msg_class classify_fmt(const char *fmt)
{
	ei_x_buff x;
	sn_x_new(&x);
	cr_assert_eq(ei_x_format_wo_ver(&x, fmt), 0, "format %s", fmt);
	enum shardnode_msg_class c = shardnode_msg_classify(x.buff);
	ei_x_free(&x);
	return c;
}

Test(shardnode_msg, classify_reads_each_kind_of_head)
{
	cr_assert_eq(classify_fmt("{\"a\", incr}"), SN_CLASS_PAIR);
	cr_assert_eq(classify_fmt("{42, {put, k, v}}"), SN_CLASS_PAIR);
	cr_assert_eq(classify_fmt("{alice, incr}"), SN_CLASS_PAIR, "an atom id");
	cr_assert_eq(classify_fmt("{'$gen_call', {a, b}, req}"), SN_CLASS_GEN_CALL);
	cr_assert_eq(classify_fmt("{'$gen_call', x}"), SN_CLASS_PAIR, "no call at arity 2: an entity named '$gen_call'");
	cr_assert_eq(classify_fmt("{'$gen_cast', {a, incr}}"), SN_CLASS_GEN_CAST);
	cr_assert_eq(classify_fmt("{system, {a, b}, get_state}"), SN_CLASS_SYSTEM);
	cr_assert_eq(classify_fmt("{system, x}"), SN_CLASS_PAIR);
	cr_assert_eq(classify_fmt("{'$shardnode_calls', c, []}"), SN_CLASS_CALLS);
	cr_assert_eq(classify_fmt("{'$shardnode', register, 1}"), SN_CLASS_MEMBER);
	cr_assert_eq(classify_fmt("{'$shardnode', aged, 5, {a, b}}"), SN_CLASS_MEMBER);
	cr_assert_eq(classify_fmt("{'$shardnode_done', 1, 2, 3}"), SN_CLASS_FROM_HOST);
	cr_assert_eq(classify_fmt("{'$shardnode_crashed', 1, 2}"), SN_CLASS_FROM_HOST);
	cr_assert_eq(classify_fmt("{'$shardnode_stopped', 1}"), SN_CLASS_FROM_HOST);
	cr_assert_eq(classify_fmt("{'$shardnode_host', ended, 1}"), SN_CLASS_FROM_HOST);
	cr_assert_eq(classify_fmt("hello"), SN_CLASS_OTHER);
	cr_assert_eq(classify_fmt("{a, b, c}"), SN_CLASS_OTHER);
	cr_assert_eq(classify_fmt("{}"), SN_CLASS_OTHER);
	cr_assert_eq(classify_fmt("[1, 2]"), SN_CLASS_OTHER);
}

/* An atom compares alike in every encoding: '$gen_call' as ATOM_EXT
 * (Latin-1, as an old peer or ei may write it) is a call too. */
Test(shardnode_msg, classify_takes_latin1_atoms)
{
	ei_x_buff x;
	sn_x_new(&x);
	cr_assert_eq(ei_x_encode_tuple_header(&x, 3), 0);
	cr_assert_eq(ei_x_append_buf(&x, "\x64\x00\x09$gen_call", 12), 0);
	cr_assert_eq(ei_x_encode_atom(&x, "from"), 0);
	cr_assert_eq(ei_x_encode_atom(&x, "req"), 0);
	cr_assert_eq(shardnode_msg_classify(x.buff), SN_CLASS_GEN_CALL);
	ei_x_free(&x);
}
