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
