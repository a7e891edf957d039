/* shardnode_msg.c — see shardnode_msg.h. */
#include "etf/shardnode_msg.h"

#include <errno.h>

#include "etf/term.h"
#include "etf/term_encode.h"

int shardnode_msg_begin(ei_x_buff *x, int arity, const char *kind)
{
	if (ei_x_encode_tuple_header(x, arity) < 0 || term_x_encode_atom(x, SHARDNODE_MSG_TAG) < 0 ||
	    term_x_encode_atom(x, kind) < 0)
		return -ENOMEM;
	return 0;
}

bool shardnode_msg_head(const char *buf, size_t *idx, long *arity)
{
	*idx = 0;
	*arity = term_get_tuple(buf, idx);
	if (*arity < 1 || !term_is_atom(buf, *idx, SHARDNODE_MSG_TAG))
		return false;
	term_skip(buf, idx);
	return true;
}

static bool is_atom_tag(unsigned char t)
{
	return t == ERL_SMALL_ATOM_UTF8_EXT || t == ERL_ATOM_UTF8_EXT || t == ERL_SMALL_ATOM_EXT || t == ERL_ATOM_EXT;
}

enum shardnode_msg_class shardnode_msg_classify(const char *buf)
{
	size_t i = 0;
	long arity = term_get_tuple(buf, &i);
	if (arity < 1)
		return SN_CLASS_OTHER;
	/* An entity's message: its id is seldom an atom, and then one look at
	 * a byte says so. */
	if (!is_atom_tag((unsigned char)buf[i]))
		return arity == 2 ? SN_CLASS_PAIR : SN_CLASS_OTHER;
	if (arity == 3 && term_is_atom(buf, i, "$gen_call"))
		return SN_CLASS_GEN_CALL;
	if (arity == 2 && term_is_atom(buf, i, "$gen_cast"))
		return SN_CLASS_GEN_CAST;
	if (term_is_atom(buf, i, SHARDNODE_MSG_TAG))
		return SN_CLASS_MEMBER;
	if (arity == 3 && term_is_atom(buf, i, SN_ATOM_CALLS))
		return SN_CLASS_CALLS;
	if (arity == 3 && term_is_atom(buf, i, "system"))
		return SN_CLASS_SYSTEM;
	if (term_is_atom(buf, i, SN_ATOM_DONE) || term_is_atom(buf, i, SN_ATOM_CRASHED) ||
	    term_is_atom(buf, i, SN_ATOM_STOPPED) || term_is_atom(buf, i, SN_ATOM_HOST) ||
	    term_is_atom(buf, i, SN_ATOM_BATCH))
		return SN_CLASS_FROM_HOST;
	return arity == 2 ? SN_CLASS_PAIR : SN_CLASS_OTHER;
}
