/* gen_call.c — see gen_call.h. */
#include "dist/gen_call.h"

#include <errno.h>
#include <string.h>

#include "etf/term.h"

int gen_call_parse(const char *msg, size_t len, struct gen_call *out)
{
	size_t i = 0;
	if (term_get_tuple(msg, &i) != 3 || !term_is_atom(msg, i, "$gen_call"))
		return 0;
	term_skip(msg, &i);
	if (term_get_tuple(msg, &i) != 2)
		return -EPROTO;
	if (term_get_pid(msg, &i, &out->from))
		return -EPROTO;
	out->tag = msg + i;
	term_skip(msg, &i);
	out->tag_len = (size_t)(msg + i - out->tag);
	out->request = msg + i;
	term_skip(msg, &i);
	out->request_len = (size_t)(msg + i - out->request);
	if (i != len)
		return -EPROTO;
	return 1;
}

int gen_call_tag_alias(const char *tag, size_t tag_len, const char **ref, size_t *ref_len)
{
	int index = 0, arity = 0, type = 0, size = 0;
	char atom[MAXATOMLEN_UTF8];
	if (ei_decode_list_header(tag, &index, &arity) < 0 || arity != 1 || ei_decode_atom(tag, &index, atom) < 0 ||
	    strcmp(atom, "alias") != 0 || ei_get_type(tag, &index, &type, &size) < 0 ||
	    (type != ERL_NEWER_REFERENCE_EXT && type != ERL_NEW_REFERENCE_EXT))
		return 0;
	int start = index;
	if (ei_skip_term(tag, &index) < 0 || (size_t)index != tag_len)
		return 0;
	*ref = tag + start;
	*ref_len = (size_t)(index - start);
	return 1;
}

int gen_call_encode_reply(ei_x_buff *x, const struct gen_call *call, const char *reply, size_t reply_len)
{
	return gen_call_encode_reply_tag(x, call->tag, call->tag_len, reply, reply_len);
}

int gen_call_encode_reply_tag(ei_x_buff *x, const char *tag, size_t tag_len, const char *reply, size_t reply_len)
{
	if (ei_x_encode_version(x) < 0 || ei_x_encode_tuple_header(x, 2) < 0)
		return -ENOMEM;
	if (term_x_append_raw(x, tag, tag_len))
		return -ENOMEM;
	return term_x_append_raw(x, reply, reply_len);
}
