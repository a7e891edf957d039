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
