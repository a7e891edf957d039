/* entity_id_scalar.c — see entity_id_scalar.h. */
#include "etf/entity_id_scalar.h"
#include "base/byteorder.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "etf/term.h"

/* The buffer stays plain malloc memory, as ei_x_free() expects. */
int id_io_put(struct id_io *io, const void *p, size_t n)
{
	ei_x_buff *x = io->out;
	if (n == 0)
		return 0;
	if (x->index < 0 || n > (size_t)(INT_MAX - x->index))
		return -ENOMEM;
	size_t need = (size_t)x->index + n;
	if (!x->buff || need > (size_t)x->buffsz) {
		size_t cap = x->buffsz > 0 ? (size_t)x->buffsz : 64;
		while (cap < need)
			cap = cap > INT_MAX / 2 ? (size_t)INT_MAX : 2 * cap;
		char *b = realloc(x->buff, cap);
		if (!b)
			return -ENOMEM;
		x->buff = b;
		x->buffsz = (int)cap;
	}
	memcpy(x->buff + x->index, p, n);
	x->index += (int)n;
	return 0;
}


static int put_int(struct id_io *c, int64_t v)
{
	unsigned char b[5];
	if (v >= 0 && v <= 255) {
		b[0] = ERL_SMALL_INTEGER_EXT;
		b[1] = (unsigned char)v;
		return id_io_put(c, b, 2);
	}
	b[0] = ERL_INTEGER_EXT;
	be32_write(b + 1, (uint32_t)(int32_t)v);
	return id_io_put(c, b, 5);
}

static int read_big(struct id_io *c, unsigned char tag)
{
	const unsigned char *b = c->in + c->i;
	size_t n, h;
	unsigned sign;
	if (tag == ERL_SMALL_BIG_EXT) {
		if (id_io_avail(c) < 3)
			return -EPROTO;
		n = b[1];
		sign = b[2] != 0; /* any byte but 0 is negative, as binary_to_term reads it */
		h = 3;
	} else {
		if (id_io_avail(c) < 6)
			return -EPROTO;
		n = be32_read(b + 1);
		sign = b[5] != 0;
		h = 6;
	}
	if (id_io_avail(c) - h < n)
		return -EPROTO;
	const unsigned char *d = b + h;
	c->i += h + n;
	while (n && d[n - 1] == 0)
		n--;
	if (n <= 4) {
		uint64_t m = 0;
		for (size_t k = 0; k < n; k++)
			m |= (uint64_t)d[k] << (8 * k);
		if (!sign && m <= INT32_MAX)
			return put_int(c, (int64_t)m);
		if (sign && m <= (uint64_t)INT32_MAX + 1)
			return put_int(c, -(int64_t)m);
	}
	unsigned char hd[6];
	size_t hn;
	if (n <= 255) {
		hd[0] = ERL_SMALL_BIG_EXT;
		hd[1] = (unsigned char)n;
		hd[2] = (unsigned char)sign;
		hn = 3;
	} else {
		hd[0] = ERL_LARGE_BIG_EXT;
		be32_write(hd + 1, (uint32_t)n);
		hd[5] = (unsigned char)sign;
		hn = 6;
	}
	int rc = id_io_put(c, hd, hn);
	return rc ? rc : id_io_put(c, d, n);
}

static int put_double(struct id_io *c, double v)
{
	if (!isfinite(v))
		return -EPROTO;
	uint64_t bits;
	memcpy(&bits, &v, sizeof bits);
	unsigned char b[9];
	b[0] = NEW_FLOAT_EXT;
	be32_write(b + 1, (uint32_t)(bits >> 32));
	be32_write(b + 5, (uint32_t)bits);
	return id_io_put(c, b, 9);
}

/* FLOAT_EXT: 31 bytes of text, as the BEAM reads it (term.h). */
static int read_text_float(struct id_io *c)
{
	if (id_io_avail(c) < 32)
		return -EPROTO;
	double v;
	if (term_float_text_value((const char *)c->in + c->i + 1, &v))
		return -EPROTO;
	c->i += 32;
	return put_double(c, v);
}

static int read_new_float(struct id_io *c)
{
	if (id_io_avail(c) < 9)
		return -EPROTO;
	const unsigned char *b = c->in + c->i;
	if (((b[1] & 0x7f) == 0x7f) && ((b[2] & 0xf0) == 0xf0))
		return -EPROTO; /* exponent all ones: infinity or NaN */
	c->i += 9;
	return id_io_put(c, b, 9);
}

static int put_atom_header(struct id_io *c, size_t n)
{
	unsigned char h[3];
	if (n <= 255) {
		h[0] = ERL_SMALL_ATOM_UTF8_EXT;
		h[1] = (unsigned char)n;
		return id_io_put(c, h, 2);
	}
	h[0] = ERL_ATOM_UTF8_EXT;
	be16_write(h + 1, (uint16_t)n);
	return id_io_put(c, h, 3);
}

static int read_atom(struct id_io *c, unsigned char tag)
{
	const unsigned char *b = c->in + c->i;
	size_t n, h;
	if (tag == ERL_ATOM_EXT || tag == ERL_ATOM_UTF8_EXT) {
		if (id_io_avail(c) < 3)
			return -EPROTO;
		n = be16_read(b + 1);
		h = 3;
	} else {
		if (id_io_avail(c) < 2)
			return -EPROTO;
		n = b[1];
		h = 2;
	}
	if (id_io_avail(c) - h < n)
		return -EPROTO;
	const unsigned char *s = b + h;
	c->i += h + n;

	if (tag == ERL_ATOM_UTF8_EXT || tag == ERL_SMALL_ATOM_UTF8_EXT) {
		if (!term_atom_text_ok(s, n, true))
			return -EPROTO;
		int rc = put_atom_header(c, n);
		return rc ? rc : id_io_put(c, s, n);
	}
	/* Latin-1: one character per byte. */
	if (!term_atom_text_ok(s, n, false))
		return -EPROTO;
	unsigned char u[2 * 255];
	size_t m = 0;
	for (size_t k = 0; k < n; k++) {
		if (s[k] < 0x80) {
			u[m++] = s[k];
		} else {
			u[m++] = (unsigned char)(0xC0 | s[k] >> 6);
			u[m++] = (unsigned char)(0x80 | (s[k] & 0x3F));
		}
	}
	int rc = put_atom_header(c, m);
	return rc ? rc : id_io_put(c, u, m);
}

static int read_binary(struct id_io *c)
{
	if (id_io_avail(c) < 5)
		return -EPROTO;
	size_t n = be32_read(c->in + c->i + 1);
	if (id_io_avail(c) - 5 < n)
		return -EPROTO;
	const unsigned char *b = c->in + c->i;
	c->i += 5 + n;
	return id_io_put(c, b, 5 + n);
}

static int read_bitstring(struct id_io *c)
{
	if (id_io_avail(c) < 6)
		return -EPROTO;
	const unsigned char *b = c->in + c->i;
	size_t n = be32_read(b + 1);
	unsigned bits = b[5];
	if ((n == 0 ? bits != 0 : (bits < 1 || bits > 8)) || id_io_avail(c) - 6 < n)
		return -EPROTO;
	c->i += 6 + n;
	unsigned char h[6];
	int rc;
	/* Whole bytes (and no bytes at all: <<>>) are a binary, written as
	 * term_to_binary writes one. */
	if (n == 0 || bits == 8) {
		h[0] = ERL_BINARY_EXT;
		be32_write(h + 1, (uint32_t)n);
		rc = id_io_put(c, h, 5);
		return rc ? rc : id_io_put(c, b + 6, n);
	}
	memcpy(h, b, 6);
	unsigned char last = (unsigned char)(b[6 + n - 1] & (0xFFu << (8 - bits)));
	if ((rc = id_io_put(c, h, 6)) || (rc = id_io_put(c, b + 6, n - 1)))
		return rc;
	return id_io_put(c, &last, 1);
}

static int read_string(struct id_io *c)
{
	if (id_io_avail(c) < 3)
		return -EPROTO;
	size_t n = be16_read(c->in + c->i + 1);
	if (id_io_avail(c) - 3 < n)
		return -EPROTO;
	const unsigned char *b = c->in + c->i;
	c->i += 3 + n;
	if (n == 0) {
		unsigned char nil = ERL_NIL_EXT;
		return id_io_put(c, &nil, 1);
	}
	return id_io_put(c, b, 3 + n);
}

int id_read_scalar(struct id_io *c, unsigned char tag)
{
	const unsigned char *b = c->in + c->i;
	switch (tag) {
	case ERL_SMALL_INTEGER_EXT:
		if (id_io_avail(c) < 2)
			return -EPROTO;
		c->i += 2;
		return id_io_put(c, b, 2);
	case ERL_INTEGER_EXT:
		if (id_io_avail(c) < 5)
			return -EPROTO;
		c->i += 5;
		return put_int(c, (int32_t)be32_read(b + 1));
	case ERL_SMALL_BIG_EXT:
	case ERL_LARGE_BIG_EXT:
		return read_big(c, tag);
	case NEW_FLOAT_EXT:
		return read_new_float(c);
	case ERL_FLOAT_EXT:
		return read_text_float(c);
	case ERL_ATOM_EXT:
	case ERL_SMALL_ATOM_EXT:
	case ERL_ATOM_UTF8_EXT:
	case ERL_SMALL_ATOM_UTF8_EXT:
		return read_atom(c, tag);
	case ERL_BINARY_EXT:
		return read_binary(c);
	case ERL_BIT_BINARY_EXT:
		return read_bitstring(c);
	case ERL_NIL_EXT: {
		c->i++;
		return id_io_put(c, b, 1);
	}
	case ERL_STRING_EXT:
		return read_string(c);
	default:
		return -EPROTO;
	}
}
