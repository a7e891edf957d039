/* term_read.c — the small helpers of term.h for reading and writing the
 * terms the node handles itself: atoms compared and decoded in every
 * encoding, pids, tuple headers, small integers, and the error replies
 * every request handler needs. (The validator and term_skip are in
 * term.c.) */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <ei.h>

#include "base/byteorder.h"
#include "etf/term.h"
#include "etf/term_encode.h"

/* The text of the atom at b[idx] within len bytes: *text, *n bytes, and
 * whether they are Latin-1. False if no whole atom is there. Inline, so
 * that callers without a bound (len SIZE_MAX) drop its checks. */
static inline bool atom_text(const unsigned char *b, size_t len, size_t idx, const unsigned char **text,
			     size_t *n, bool *latin1)
{
	if (idx >= len)
		return false;
	unsigned char tag = b[idx];
	size_t head;
	if (tag == ERL_ATOM_EXT || tag == ERL_ATOM_UTF8_EXT) {
		if (len - idx < 3)
			return false;
		*n = be16_read(b + idx + 1);
		head = 3;
	} else if (tag == ERL_SMALL_ATOM_EXT || tag == ERL_SMALL_ATOM_UTF8_EXT) {
		if (len - idx < 2)
			return false;
		*n = b[idx + 1];
		head = 2;
	} else {
		return false;
	}
	if (len - idx - head < *n)
		return false;
	*text = b + idx + head;
	*latin1 = tag == ERL_ATOM_EXT || tag == ERL_SMALL_ATOM_EXT;
	return true;
}

/* Bytes of Latin-1 text once converted to UTF-8. */
static size_t latin1_utf8_len(const unsigned char *t, size_t n)
{
	size_t out = n;
	for (size_t k = 0; k < n; k++)
		out += t[k] >> 7;
	return out;
}

bool term_atom_equals(const char *buf, size_t len, size_t idx, const char *name, size_t name_len)
{
	const unsigned char *t, *nm = (const unsigned char *)name;
	size_t n;
	bool latin1;
	if (!atom_text((const unsigned char *)buf, len, idx, &t, &n, &latin1))
		return false;
	if (!latin1) {
		if (n > TERM_ATOM_BUF - 1 || n < name_len || memcmp(t, nm, name_len) != 0)
			return false;
		return n == name_len || t[name_len] == 0; /* text ends, or stops at a NUL */
	}
	/* Only text of more than (TERM_ATOM_BUF - 1) / 2 bytes can outgrow the
	 * bound once converted; shorter atoms skip the count. */
	if (n > (TERM_ATOM_BUF - 1) / 2 && latin1_utf8_len(t, n) > TERM_ATOM_BUF - 1)
		return false;
	/* Convert as we compare: a character below 0x80 is one byte in both
	 * encodings, one above is two in UTF-8, neither of them NUL. */
	size_t o = 0;
	for (size_t k = 0; k < n; k++) {
		unsigned char c = t[k];
		if (o == name_len)
			return c == 0;
		if (c < 0x80) {
			if (nm[o++] != c)
				return false;
			continue;
		}
		if (nm[o] != (unsigned char)(0xC0 | c >> 6) || o + 1 == name_len ||
		    nm[o + 1] != (unsigned char)(0x80 | (c & 0x3F)))
			return false;
		o += 2;
	}
	return o == name_len;
}

int term_get_atom(const char *buf, size_t *idx, char *out)
{
	return term_get_atom_sized(buf, idx, out, TERM_ATOM_BUF);
}

int term_get_atom_sized(const char *buf, size_t *idx, char *out, size_t out_size)
{
	/* Not ei_decode_atom_as: for Latin-1 text of 1021 bytes as UTF-8 it
	 * writes 1022 bytes (text and NUL) into a buffer it was told holds
	 * 1021. Here the whole conversion is bounded first. */
	const unsigned char *t;
	size_t n, o = 0;
	bool latin1;
	if (!atom_text((const unsigned char *)buf, SIZE_MAX, *idx, &t, &n, &latin1))
		return -EPROTO;
	if (out_size < 1 || out_size > TERM_ATOM_BUF)
		return -EPROTO;
	if (!latin1) {
		if (n > out_size - 1)
			return -EPROTO;
		memcpy(out, t, n);
		o = n;
	} else {
		if (latin1_utf8_len(t, n) > out_size - 1)
			return -EPROTO;
		for (size_t k = 0; k < n; k++) {
			unsigned char c = t[k];
			if (c < 0x80) {
				out[o++] = (char)c;
			} else {
				out[o++] = (char)(0xC0 | c >> 6);
				out[o++] = (char)(0x80 | (c & 0x3F));
			}
		}
	}
	out[o] = '\0';
	*idx = (size_t)(t + n - (const unsigned char *)buf);
	return 0;
}

int term_get_pid(const char *buf, size_t *idx, erlang_pid *out)
{
	/* ei_decode_pid converts the node name with its general atom decoder,
	 * a tenth of the cost of a message; term_get_atom does the same
	 * conversion within the same bound, and refuses the one case where
	 * ei's overruns the node buffer (see term_get_atom). */
	const unsigned char *b = (const unsigned char *)buf;
	unsigned char tag = b[*idx];
	if (tag != ERL_PID_EXT && tag != ERL_NEW_PID_EXT)
		return -EPROTO;
	size_t i = *idx + 1;
	if (term_get_atom(buf, &i, out->node))
		return -EPROTO;
	out->num = be32_read(b + i);
	out->serial = be32_read(b + i + 4);
	if (tag == ERL_PID_EXT) {
		out->creation = b[i + 8] & 0x03; /* 2 bits, as ei reads them */
		i += 9;
	} else {
		out->creation = be32_read(b + i + 8);
		i += 12;
	}
	*idx = i;
	return 0;
}

bool term_pid_equal(const erlang_pid *a, const erlang_pid *b)
{
	return a->num == b->num && a->serial == b->serial && a->creation == b->creation &&
	       strcmp(a->node, b->node) == 0;
}

void term_pid_set(erlang_pid *dst, const char *node, size_t node_len, uint32_t num, uint32_t serial,
		  uint32_t creation)
{
	memcpy(dst->node, node, node_len);
	dst->node[node_len] = '\0';
	dst->num = num;
	dst->serial = serial;
	dst->creation = creation;
}

void term_pid_copy(erlang_pid *dst, const erlang_pid *src)
{
	term_pid_set(dst, src->node, strnlen(src->node, sizeof src->node - 1), src->num, src->serial, src->creation);
}

long term_get_tuple(const char *buf, size_t *idx)
{
	/* Read directly rather than with ei_decode_tuple_header: the header is
	 * read for nearly every message, and the bytes are already validated.
	 * A LARGE_TUPLE_EXT arity is taken as the signed 32-bit int ei gives. */
	const unsigned char *b = (const unsigned char *)buf + *idx;
	if (b[0] == ERL_SMALL_TUPLE_EXT) {
		*idx += 2;
		return b[1];
	}
	if (b[0] == ERL_LARGE_TUPLE_EXT) {
		*idx += 5;
		return (int32_t)be32_read(b + 1);
	}
	return -1;
}

int term_get_long(const char *buf, size_t *idx, long *out)
{
	/* A small integer (every op) is read here; other encodings go to ei. */
	if ((unsigned char)buf[*idx] == ERL_SMALL_INTEGER_EXT) {
		*out = (unsigned char)buf[*idx + 1];
		*idx += 2;
		return 0;
	}
	int i = (int)*idx;
	long v;
	/* ei accepts any integer that fits a long; the callers want the
	 * non-negative 32-bit range promised in term.h (ops, counts). */
	if (ei_decode_long(buf, &i, &v) < 0 || v < 0 || v > INT32_MAX)
		return -EPROTO;
	*out = v;
	*idx = (size_t)i;
	return 0;
}

int term_x_append_raw(ei_x_buff *x, const char *bytes, size_t n)
{
	if (n > INT32_MAX)
		return -ENOMEM;
	return ei_x_append_buf(x, bytes, (int)n) < 0 ? -ENOMEM : 0;
}

int term_x_whole_or_enomem(ei_x_buff *x, int start, int rc)
{
	if (rc >= 0)
		return 0;
	x->index = start;
	if (term_x_error_atom(x, "enomem") < 0) {
		x->index = start;
		return -ENOMEM;
	}
	return 0;
}

int term_x_error_atom(ei_x_buff *x, const char *reason)
{
	if (ei_x_encode_tuple_header(x, 2) < 0 || term_x_encode_atom(x, "error") < 0 ||
	    term_x_encode_atom(x, reason) < 0)
		return -ENOMEM;
	return 0;
}

int term_x_error_tagged_raw(ei_x_buff *x, const char *tag, const char *raw, size_t raw_len)
{
	if (ei_x_encode_tuple_header(x, 2) < 0 || term_x_encode_atom(x, "error") < 0 ||
	    ei_x_encode_tuple_header(x, 2) < 0 || term_x_encode_atom(x, tag) < 0)
		return -ENOMEM;
	return term_x_append_raw(x, raw, raw_len);
}
