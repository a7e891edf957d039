/* entity_int.c — integers of any size for entity types (entity.h).
 *
 * struct entity_int's 64 bits are one of:
 *   0                 the value 0 (a zeroed state);
 *   odd               a small value v in [-2^62, 2^62), stored as v * 2 + 1
 *                     (0 as 1 once computed);
 *   even, not 0       a pointer to a struct big (malloc aligns it).
 * A value is small whenever it fits that range: every function leaves its
 * result in that form, so a big value is never one a small could hold.
 *
 * A big value is a sign and a magnitude in little-endian bytes with no
 * high zero byte, exactly the body of SMALL_BIG_EXT and LARGE_BIG_EXT:
 * decoding and encoding copy it, and the arithmetic (sums only) runs a
 * byte at a time, which is plenty for counters that rarely leave 63 bits. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "entity/entity.h"
#include "etf/term_encode.h"

_Static_assert(sizeof(void *) <= sizeof(uint64_t), "a pointer fits the bits");

#define SMALL_MIN (-(INT64_C(1) << 62))
#define SMALL_MAX ((INT64_C(1) << 62) - 1)

struct big {
	uint32_t len;  /* bytes of mag; the last is not 0 */
	bool negative;
	uint8_t mag[];
};

/* A value as sign and magnitude, borrowed or in `own` (small values). */
struct view {
	bool negative;
	uint32_t len;
	const uint8_t *mag;
	uint8_t own[8];
};

static bool is_big(const struct entity_int *v)
{
	return v->bits != 0 && (v->bits & 1) == 0;
}

static struct big *big_of(const struct entity_int *v)
{
	return (struct big *)(uintptr_t)v->bits;
}

static int64_t small_of(const struct entity_int *v)
{
	/* bits is v * 2 + 1 as an unsigned word: halve it as a signed one
	 * (GCC and Clang shift signed values arithmetically). */
	return v->bits == 0 ? 0 : (int64_t)v->bits >> 1;
}

static void set_small(struct entity_int *v, int64_t x)
{
	v->bits = ((uint64_t)x << 1) | 1;
}

static void view_of(const struct entity_int *v, struct view *w)
{
	if (is_big(v)) {
		const struct big *b = big_of(v);
		w->negative = b->negative;
		w->len = b->len;
		w->mag = b->mag;
		return;
	}
	int64_t x = small_of(v);
	w->negative = x < 0;
	/* |x| < 2^62: no overflow in the negation */
	uint64_t m = (uint64_t)(x < 0 ? -x : x);
	w->len = 0;
	while (m != 0) {
		w->own[w->len++] = (uint8_t)m;
		m >>= 8;
	}
	w->mag = w->own;
}

/* Makes *out the value sign/mag (mag's high zero bytes ignored): small if
 * it fits, else a new big. Returns 0 or -ENOMEM (*out untouched). Does not
 * release what *out held. */
static int make(struct entity_int *out, bool negative, const uint8_t *mag, size_t len)
{
	while (len > 0 && mag[len - 1] == 0)
		len--;
	if (len <= 8) {
		uint64_t m = 0;
		for (size_t k = len; k-- > 0;)
			m = (m << 8) | mag[k];
		if (m <= (uint64_t)SMALL_MAX || (negative && m == (uint64_t)SMALL_MAX + 1)) {
			set_small(out, negative ? -(int64_t)m : (int64_t)m);
			return 0;
		}
	}
	if (len > UINT32_MAX)
		return -ENOMEM;
	struct big *b = malloc(sizeof *b + len);
	if (b == NULL)
		return -ENOMEM;
	b->len = (uint32_t)len;
	b->negative = negative;
	memcpy(b->mag, mag, len);
	out->bits = (uint64_t)(uintptr_t)b;
	return 0;
}

void entity_int_free(struct entity_int *v)
{
	if (is_big(v))
		free(big_of(v));
	v->bits = 0;
}

void entity_int_set_i64(struct entity_int *v, int64_t x)
{
	entity_int_free(v);
	if (x >= SMALL_MIN && x <= SMALL_MAX) {
		set_small(v, x);
		return;
	}
	/* The rest of int64_t's range needs a big of 8 bytes; out of memory,
	 * 0 rather than a value that is wrong. */
	uint64_t m = x < 0 ? (uint64_t)0 - (uint64_t)x : (uint64_t)x;
	uint8_t mag[8];
	for (int k = 0; k < 8; k++)
		mag[k] = (uint8_t)(m >> (8 * k));
	(void)make(v, x < 0, mag, 8);
}

int entity_int_get_i64(const struct entity_int *v, int64_t *out)
{
	if (!is_big(v)) {
		*out = small_of(v);
		return 1;
	}
	const struct big *b = big_of(v);
	if (b->len > 8)
		return 0;
	uint64_t m = 0;
	for (uint32_t k = b->len; k-- > 0;)
		m = (m << 8) | b->mag[k];
	if (!b->negative && m <= (uint64_t)INT64_MAX) {
		*out = (int64_t)m;
		return 1;
	}
	if (b->negative && m <= (uint64_t)INT64_MAX + 1) {
		*out = m == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)m;
		return 1;
	}
	return 0;
}

static uint32_t be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

int entity_int_decode(const char *buf, size_t *idx, struct entity_int *out)
{
	const unsigned char *b = (const unsigned char *)buf + *idx;
	size_t n;
	int rc;
	switch (b[0]) {
	case ERL_SMALL_INTEGER_EXT:
		set_small(out, b[1]);
		*idx += 2;
		return 0;
	case ERL_INTEGER_EXT:
		set_small(out, (int32_t)be32(b + 1));
		*idx += 5;
		return 0;
	case ERL_SMALL_BIG_EXT:
		n = b[1];
		if ((rc = make(out, b[2] != 0, b + 3, n)) == 0)
			*idx += 3 + n;
		return rc;
	case ERL_LARGE_BIG_EXT:
		n = be32(b + 1);
		if ((rc = make(out, b[5] != 0, b + 6, n)) == 0)
			*idx += 6 + n;
		return rc;
	default:
		return -EPROTO;
	}
}

static int compare_mag(const struct view *a, const struct view *b)
{
	uint32_t la = a->len, lb = b->len;
	while (la > 0 && a->mag[la - 1] == 0)
		la--;
	while (lb > 0 && b->mag[lb - 1] == 0)
		lb--;
	if (la != lb)
		return la < lb ? -1 : 1;
	for (uint32_t k = la; k-- > 0;)
		if (a->mag[k] != b->mag[k])
			return a->mag[k] < b->mag[k] ? -1 : 1;
	return 0;
}

int entity_int_compare(const struct entity_int *a, const struct entity_int *b)
{
	if (!is_big(a) && !is_big(b)) {
		int64_t x = small_of(a), y = small_of(b);
		return x < y ? -1 : x > y;
	}
	struct view va, vb;
	view_of(a, &va);
	view_of(b, &vb);
	bool za = va.len == 0, zb = vb.len == 0;
	bool na = va.negative && !za, nb = vb.negative && !zb;
	if (na != nb)
		return na ? -1 : 1;
	int m = compare_mag(&va, &vb);
	return na ? -m : m;
}

int entity_int_add(struct entity_int *acc, const struct entity_int *x)
{
	if (!is_big(acc) && !is_big(x)) {
		/* Both in [-2^62, 2^62): their sum cannot overflow int64_t. */
		int64_t s = small_of(acc) + small_of(x);
		if (s >= SMALL_MIN && s <= SMALL_MAX) {
			set_small(acc, s);
			return 0;
		}
	}
	struct view a, b;
	view_of(acc, &a);
	view_of(x, &b);
	uint32_t len = (a.len > b.len ? a.len : b.len) + 1;
	uint8_t *mag = calloc(len, 1);
	if (mag == NULL)
		return -ENOMEM;
	bool negative;
	if (a.negative == b.negative) {
		negative = a.negative;
		unsigned carry = 0;
		for (uint32_t k = 0; k < len; k++) {
			unsigned s = carry + (k < a.len ? a.mag[k] : 0) + (k < b.len ? b.mag[k] : 0);
			mag[k] = (uint8_t)s;
			carry = s >> 8;
		}
	} else {
		/* The larger magnitude minus the smaller, with the larger's sign. */
		const struct view *hi = compare_mag(&a, &b) >= 0 ? &a : &b, *lo = hi == &a ? &b : &a;
		negative = hi->negative;
		int borrow = 0;
		for (uint32_t k = 0; k < hi->len; k++) {
			int d = (int)hi->mag[k] - (k < lo->len ? lo->mag[k] : 0) - borrow;
			borrow = d < 0;
			mag[k] = (uint8_t)(d + (borrow ? 256 : 0));
		}
	}
	struct entity_int result = {0};
	int rc = make(&result, negative, mag, len);
	free(mag);
	if (rc == 0) {
		entity_int_free(acc);
		*acc = result;
	}
	return rc;
}

int entity_int_add_i64(struct entity_int *acc, int64_t x)
{
	struct entity_int v = {0};
	entity_int_set_i64(&v, x);
	int rc = entity_int_add(acc, &v);
	entity_int_free(&v);
	return rc;
}

int entity_int_encode(ei_x_buff *out, const struct entity_int *v)
{
	if (!is_big(v))
		return term_x_encode_int(out, small_of(v)) < 0 ? -ENOMEM : 0;
	const struct big *b = big_of(v);
	unsigned char head[6];
	size_t head_len;
	if (b->len <= 255) {
		head[0] = ERL_SMALL_BIG_EXT;
		head[1] = (unsigned char)b->len;
		head[2] = b->negative;
		head_len = 3;
	} else {
		head[0] = ERL_LARGE_BIG_EXT;
		head[1] = (unsigned char)(b->len >> 24);
		head[2] = (unsigned char)(b->len >> 16);
		head[3] = (unsigned char)(b->len >> 8);
		head[4] = (unsigned char)b->len;
		head[5] = b->negative;
		head_len = 6;
	}
	if (ei_x_append_buf(out, (const char *)head, (int)head_len) < 0 ||
	    ei_x_append_buf(out, (const char *)b->mag, (int)b->len) < 0)
		return -ENOMEM;
	return 0;
}
