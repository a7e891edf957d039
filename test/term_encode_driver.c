/*
 * term_encode_driver.c — port program for term_encode_SUITE: writes terms
 * back with the node's encoders, so the suite can compare the bytes with
 * term_to_binary on the live BEAM.
 *
 * Protocol ({packet, 4} on both sides), one reply per request:
 *   request:  a byte saying which encoder, then term_to_binary(T) (with 131)
 *             'i'  T is an integer: term_x_encode_int (or, for one above
 *                  INT64_MAX, term_x_encode_uint)
 *             'u'  T is a non-negative integer: term_x_encode_uint
 *             'n'  T is an integer: entity_int_decode, then entity_int_encode
 *                  (the counters' replies, stored states and hand-offs)
 *             'a'  T is an atom: term_get_atom, then term_x_encode_atom
 *             'p'  any T: term_print's text (not a term)
 *   reply:    131 and the term as written (for 'p', the text), or, if the
 *             C side refused it, the single byte 0
 *
 * Built by the suite itself; not part of the node.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "entity/entity.h"
#include "etf/term.h"
#include "etf/term_encode.h"
#include "etf/term_print.h"
#include "etf/term_validate.h"
#include "port_driver.h"

static int encode(char how, const char *t, size_t len, ei_x_buff *x)
{
	size_t end = 0;
	if (term_validate(t, len, &end) || end != len)
		return -EPROTO;
	int i = 0;
	switch (how) {
	case 'i': {
		long long v;
		unsigned long long u;
		if (ei_decode_longlong(t, &i, &v) == 0)
			return term_x_encode_int(x, v);
		i = 0;
		if (ei_decode_ulonglong(t, &i, &u) == 0)
			return term_x_encode_uint(x, u);
		return -ERANGE;
	}
	case 'u': {
		unsigned long long u;
		if (ei_decode_ulonglong(t, &i, &u) < 0)
			return -ERANGE;
		return term_x_encode_uint(x, u);
	}
	case 'n': {
		struct entity_int v = {0};
		size_t at = 0;
		int rc = entity_int_decode(t, &at, &v);
		if (rc == 0)
			rc = entity_int_encode(x, &v);
		entity_int_free(&v);
		return rc;
	}
	case 'a': {
		char atom[TERM_ATOM_BUF];
		size_t at = 0;
		int rc = term_get_atom(t, &at, atom);
		return rc ? rc : term_x_encode_atom(x, atom);
	}
	case 'p': {
		char *text;
		size_t at = 0;
		int rc = term_print(t, &at, SIZE_MAX, &text);
		if (rc)
			return rc;
		x->index = 0; /* the text alone */
		rc = ei_x_append_buf(x, text, (int)strlen(text)) < 0 ? -ENOMEM : 0;
		free(text);
		return rc;
	}
	default:
		return -EINVAL;
	}
}

int main(void)
{
	for (;;) {
		unsigned char hdr[4];
		if (read_exact(hdr, 4))
			return 0; /* the port was closed */
		size_t len = (size_t)hdr[0] << 24 | (size_t)hdr[1] << 16 | (size_t)hdr[2] << 8 | hdr[3];
		char *buf = malloc(len ? len : 1);
		if (!buf || read_exact(buf, len) || len < 2 || (unsigned char)buf[1] != TERM_VERSION_MAGIC)
			return 1;
		ei_x_buff x;
		if (ei_x_new_with_version(&x) < 0)
			return 1;
		int rc = encode(buf[0], buf + 2, len - 2, &x);
		free(buf);
		const char *out = rc == 0 ? x.buff : "";
		size_t n = rc == 0 ? (size_t)x.index : 1;
		unsigned char head[4];
		put32(head, (uint32_t)n);
		if (fwrite(head, 1, 4, stdout) != 4 || fwrite(out, 1, n, stdout) != n || fflush(stdout))
			return 1;
		ei_x_free(&x);
	}
}
