/* term_encode.c — see term_encode.h. */
#include "etf/term_encode.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>


static int append(ei_x_buff *x, const unsigned char *b, size_t n)
{
	return ei_x_append_buf(x, (const char *)b, (int)n) < 0 ? -ENOMEM : 0;
}

/* SMALL_BIG_EXT of a magnitude and a sign: the magnitude's bytes, least
 * significant first, as few as it takes (it is never 0 here). */
static int encode_big(ei_x_buff *x, uint64_t magnitude, bool negative)
{
	unsigned char b[3 + 8];
	size_t n = 0;
	while (magnitude != 0) {
		b[3 + n++] = (unsigned char)(magnitude & 0xff);
		magnitude >>= 8;
	}
	b[0] = ERL_SMALL_BIG_EXT;
	b[1] = (unsigned char)n;
	b[2] = negative ? 1 : 0;
	return append(x, b, 3 + n);
}

static int encode_small(ei_x_buff *x, int64_t v)
{
	if (v >= 0 && v <= 255) {
		unsigned char b[2] = {ERL_SMALL_INTEGER_EXT, (unsigned char)v};
		return append(x, b, sizeof b);
	}
	uint32_t u = (uint32_t)(int32_t)v;
	unsigned char b[5] = {ERL_INTEGER_EXT, (unsigned char)(u >> 24), (unsigned char)(u >> 16),
			      (unsigned char)(u >> 8), (unsigned char)u};
	return append(x, b, sizeof b);
}

int term_x_encode_int(ei_x_buff *x, int64_t v)
{
	if (v >= INT32_MIN && v <= INT32_MAX)
		return encode_small(x, v);
	/* The magnitude of INT64_MIN does not fit an int64_t: negate unsigned. */
	return v < 0 ? encode_big(x, 0 - (uint64_t)v, true) : encode_big(x, (uint64_t)v, false);
}

int term_x_encode_uint(ei_x_buff *x, uint64_t v)
{
	if (v <= INT32_MAX)
		return encode_small(x, (int64_t)v);
	return encode_big(x, v, false);
}

int term_x_encode_atom(ei_x_buff *x, const char *utf8)
{
	size_t len = strlen(utf8);
	/* 255 characters take at most 4 bytes each. */
	if (len >= MAXATOMLEN_UTF8)
		return -EINVAL;
	int size = 0;
	if (ei_encode_atom_len_as(NULL, &size, utf8, (int)len, ERLANG_UTF8, ERLANG_UTF8) < 0)
		return -EINVAL; /* not UTF-8, or more than 255 characters */
	return ei_x_encode_atom_len_as(x, utf8, (int)len, ERLANG_UTF8, ERLANG_UTF8) < 0 ? -ENOMEM : 0;
}
