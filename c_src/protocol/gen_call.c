/* gen_call.c — see gen_call.h. */
#include "protocol/gen_call.h"

#include <errno.h>
#include <string.h>

#include "etf/term.h"
#include "etf/term_validate.h"

/* {Label, {Pid, Tag}, Request}: gen:call/3,4's message under its label. */
static int parse_labelled(const char *msg, size_t len, const char *label, struct gen_call *out)
{
	size_t i = 0;
	if (term_get_tuple(msg, &i) != 3 || !term_is_atom(msg, i, label))
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

int gen_call_parse(const char *msg, size_t len, struct gen_call *out)
{
	return parse_labelled(msg, len, "$gen_call", out);
}

int gen_call_parse_system(const char *msg, size_t len, struct gen_call *out)
{
	return parse_labelled(msg, len, "system", out);
}

int gen_call_parse_head(const char *msg, size_t avail, struct gen_call *out)
{
	/* {'$gen_call', {Pid, Tag}, ...}: the BEAM writes a tuple of 3 as a
	 * SMALL_TUPLE_EXT. */
	if (avail < 2 || (unsigned char)msg[0] != ERL_SMALL_TUPLE_EXT || msg[1] != 3)
		return 0;
	size_t i = 2, atom = i;
	if (term_validate(msg, avail, &i) || !term_is_atom(msg, atom, "$gen_call"))
		return 0;
	if (avail - i < 2 || (unsigned char)msg[i] != ERL_SMALL_TUPLE_EXT || msg[i + 1] != 2)
		return 0;
	i += 2;
	size_t pid = i;
	if (term_validate(msg, avail, &i))
		return 0;
	size_t tag = i;
	if (term_validate(msg, avail, &i))
		return 0;
	size_t at = pid;
	if (term_get_pid(msg, &at, &out->from))
		return 0;
	out->tag = msg + tag;
	out->tag_len = i - tag;
	out->request = NULL;
	out->request_len = 0;
	return 1;
}

/* [alias | Ref] as every BEAM writes it: a one-element LIST_EXT and the
 * atom as SMALL_ATOM_UTF8_EXT, then the reference. */
static const char alias_head[] = {(char)ERL_LIST_EXT, 0, 0, 0, 1, (char)ERL_SMALL_ATOM_UTF8_EXT, 5,
				  'a', 'l', 'i', 'a', 's'};

int gen_call_tag_alias(const char *tag, size_t tag_len, const char **ref, size_t *ref_len)
{
	/* The tag was validated with the message that carried it (dist_frame.h
	 * validates every payload once, on arrival): it is not looked at again
	 * for each reply. Every reply asks this: the usual encoding is matched
	 * in place. */
	size_t head = sizeof alias_head;
	if (tag_len > head && memcmp(tag, alias_head, head) == 0 &&
	    (tag[head] == (char)ERL_NEWER_REFERENCE_EXT || tag[head] == (char)ERL_NEW_REFERENCE_EXT)) {
		*ref = tag + head;
		*ref_len = tag_len - head;
		return 1;
	}
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
