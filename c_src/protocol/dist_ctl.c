/* dist_ctl.c — see dist_ctl.h. */
#include "protocol/dist_ctl.h"
#include "base/byteorder.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "protocol/dist_frame.h"
#include "etf/term.h"

/* Version, tuple header and op: 5 bytes. */
static size_t put_head(char *out, unsigned arity, unsigned op)
{
	out[0] = (char)TERM_VERSION_MAGIC;
	out[1] = (char)ERL_SMALL_TUPLE_EXT;
	out[2] = (char)arity;
	out[3] = (char)ERL_SMALL_INTEGER_EXT;
	out[4] = (char)op;
	return 5;
}

static size_t put_empty_atom(char *out)
{
	out[0] = (char)ERL_SMALL_ATOM_UTF8_EXT;
	out[1] = 0;
	return 2;
}

/* Writes a pid (at most DIST_CTL_PID_MAX bytes); returns its length or
 * -EINVAL. Node names of nodes are ASCII in practice, and an ASCII name of
 * fewer than 256 bytes is valid UTF-8 of at most 255 characters, which ei
 * writes as a SMALL_ATOM_UTF8_EXT: that case is written here; any other
 * goes through ei_encode_pid, which checks the text, in one pass. */
static int put_pid(char *out, const erlang_pid *p)
{
	size_t n = strnlen(p->node, sizeof p->node);
	if (n == sizeof p->node)
		return -EINVAL; /* not NUL-terminated: no pid ei gave us */
	if (n < 256) {
		memcpy(out + 3, p->node, n);
		if (term_text_is_ascii(p->node, n)) {
			out[0] = (char)ERL_NEW_PID_EXT;
			out[1] = (char)ERL_SMALL_ATOM_UTF8_EXT;
			out[2] = (char)n;
			be32_write(out + 3 + n, p->num);
			be32_write(out + 7 + n, p->serial);
			be32_write(out + 11 + n, p->creation);
			return (int)(15 + n);
		}
	}
	int idx = 0;
	if (ei_encode_pid(out, &idx, p) < 0)
		return -EINVAL;
	return idx;
}

int dist_ctl_send(char *out, const erlang_pid *to)
{
	size_t i = put_head(out, 3, DOP_SEND);
	i += put_empty_atom(out + i);
	int n = put_pid(out + i, to);
	return n < 0 ? n : (int)i + n;
}

int dist_ctl_alias_send(char *out, const erlang_pid *from, const char *alias, size_t alias_len)
{
	if (alias_len > DIST_CTL_REF_MAX)
		return -EINVAL;
	size_t i = put_head(out, 3, DOP_ALIAS_SEND);
	int n = put_pid(out + i, from);
	if (n < 0)
		return n;
	i += (size_t)n;
	memcpy(out + i, alias, alias_len);
	return (int)(i + alias_len);
}

int dist_ctl_reg_send(char *out, const erlang_pid *from, const char *to_name)
{
	size_t i = put_head(out, 4, DOP_REG_SEND);
	int n = put_pid(out + i, from);
	if (n < 0)
		return n;
	i += (size_t)n;
	i += put_empty_atom(out + i);
	/* The name is not on the per-message path of the node (the coordinator
	 * and membership send with it): ei's one pass is enough. Like
	 * ei_x_encode_atom, refuse what does not fit rather than truncate. */
	size_t len = strnlen(to_name, MAXATOMLEN);
	int idx = (int)i;
	if (len >= MAXATOMLEN || ei_encode_atom_len_as(out, &idx, to_name, (int)len, ERLANG_LATIN1, ERLANG_UTF8) < 0)
		return -EINVAL;
	return idx;
}
