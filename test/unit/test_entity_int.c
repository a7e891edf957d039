/*
 * test_entity_int.c — integers of any size for entity types (entity.h):
 * the four encodings decoded, sums across every boundary (63 bits, 64
 * bits, sign changes, carries through hundreds of bytes) checked against
 * 128-bit arithmetic, and encodings as the BEAM writes them.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <ei.h>

#include "entity/entity.h"
#include "etf/term_validate.h"
#include "unit_helpers.h"

typedef __int128 i128;

/* The BEAM's encoding of an integer that fits 128 bits. */
static void encode_ref(ei_x_buff *x, i128 v)
{
	if (v >= INT32_MIN && v <= INT32_MAX) {
		cr_assert_eq(ei_x_encode_long(x, (long)v), 0);
		return;
	}
	unsigned __int128 m = v < 0 ? (unsigned __int128)0 - (unsigned __int128)v : (unsigned __int128)v;
	unsigned char body[16];
	int n = 0;
	while (m != 0) {
		body[n++] = (unsigned char)m;
		m >>= 8;
	}
	unsigned char head[3] = {ERL_SMALL_BIG_EXT, (unsigned char)n, v < 0};
	cr_assert_eq(ei_x_append_buf(x, (const char *)head, 3), 0);
	cr_assert_eq(ei_x_append_buf(x, (const char *)body, n), 0);
}

static void assert_encodes_as(const struct entity_int *v, i128 expected)
{
	ei_x_buff got, want;
	sn_x_new(&got);
	sn_x_new(&want);
	cr_assert_eq(entity_int_encode(&got, v), 0);
	encode_ref(&want, expected);
	cr_assert_eq(got.index, want.index, "lengths %d and %d", got.index, want.index);
	cr_assert_eq(memcmp(got.buff, want.buff, (size_t)got.index), 0);
	size_t end = 0;
	cr_assert_eq(term_validate(got.buff, (size_t)got.index, &end), 0);
	ei_x_free(&got);
	ei_x_free(&want);
}

static struct entity_int from_i128(i128 v)
{
	ei_x_buff x;
	sn_x_new(&x);
	encode_ref(&x, v);
	struct entity_int out = {0};
	size_t i = 0;
	cr_assert_eq(entity_int_decode(x.buff, &i, &out), 0);
	cr_assert_eq(i, (size_t)x.index, "decoding reads the whole term");
	ei_x_free(&x);
	return out;
}

Test(entity_int, a_zeroed_value_is_zero)
{
	struct entity_int v = {0};
	int64_t x = 7;
	cr_assert(entity_int_get_i64(&v, &x));
	cr_assert_eq(x, 0);
	assert_encodes_as(&v, 0);
	entity_int_free(&v);
}

Test(entity_int, the_four_encodings_decode)
{
	/* SMALL_INTEGER_EXT, INTEGER_EXT (negative), SMALL_BIG_EXT, and a
	 * LARGE_BIG_EXT that the BEAM would write shorter (accepted all the
	 * same), and a SMALL_BIG_EXT with high zero bytes (the same value). */
	const unsigned char small[] = {ERL_SMALL_INTEGER_EXT, 200};
	const unsigned char integer[] = {ERL_INTEGER_EXT, 0xff, 0xff, 0xff, 0xfe};
	const unsigned char big[] = {ERL_SMALL_BIG_EXT, 9, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
	const unsigned char large[] = {ERL_LARGE_BIG_EXT, 0, 0, 0, 2, 1, 0x34, 0x12};
	const unsigned char padded[] = {ERL_SMALL_BIG_EXT, 4, 0, 5, 0, 0, 0};
	struct {
		const unsigned char *b;
		size_t n;
		i128 value;
	} cases[] = {
		{small, sizeof small, 200},
		{integer, sizeof integer, -2},
		{big, sizeof big, (i128)1 << 64},
		{large, sizeof large, -0x1234},
		{padded, sizeof padded, 5},
	};
	for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
		struct entity_int v = {0};
		size_t i = 0;
		cr_assert_eq(entity_int_decode((const char *)cases[k].b, &i, &v), 0, "case %zu", k);
		cr_assert_eq(i, cases[k].n, "case %zu: advanced past the term", k);
		assert_encodes_as(&v, cases[k].value);
		entity_int_free(&v);
	}
	/* not an integer: refused, nothing moved */
	const unsigned char atom[] = {ERL_SMALL_ATOM_UTF8_EXT, 1, 'a'};
	const unsigned char flt[] = {NEW_FLOAT_EXT, 0x3f, 0xf0, 0, 0, 0, 0, 0, 0};
	struct entity_int v = {0};
	size_t i = 0;
	cr_assert_eq(entity_int_decode((const char *)atom, &i, &v), -EPROTO);
	cr_assert_eq(entity_int_decode((const char *)flt, &i, &v), -EPROTO);
	cr_assert_eq(i, 0);
}

Test(entity_int, sums_cross_63_and_64_bits_and_come_back)
{
	i128 steps[][2] = {
		{((i128)1 << 62) - 1, 1},               /* small -> big */
		{INT64_MAX, 1},                          /* past int64_t */
		{(i128)INT64_MAX + 1, -1},               /* back */
		{-((i128)1 << 62), -1},                  /* small's lowest - 1 */
		{INT64_MIN, -1},
		{(i128)1 << 100, -((i128)1 << 100)},     /* to zero */
		{(i128)1 << 100, -((i128)1 << 100) + 5}, /* to a small */
		{-((i128)1 << 90), ((i128)1 << 91)},     /* sign change */
		{((i128)1 << 64) - 1, 1},                /* carry into a new byte */
		{(i128)1 << 64, -1},                     /* borrow out of one */
	};
	for (size_t k = 0; k < sizeof steps / sizeof steps[0]; k++) {
		struct entity_int a = from_i128(steps[k][0]), b = from_i128(steps[k][1]);
		cr_assert_eq(entity_int_add(&a, &b), 0);
		assert_encodes_as(&a, steps[k][0] + steps[k][1]);
		int expect = steps[k][0] + steps[k][1] < steps[k][1] ? -1 : steps[k][0] + steps[k][1] > steps[k][1];
		cr_assert_eq(entity_int_compare(&a, &b), expect, "step %zu", k);
		entity_int_free(&a);
		entity_int_free(&b);
	}
	/* x + x */
	struct entity_int a = from_i128((i128)INT64_MAX);
	cr_assert_eq(entity_int_add(&a, &a), 0);
	assert_encodes_as(&a, (i128)INT64_MAX * 2);
	int64_t out;
	cr_assert_not(entity_int_get_i64(&a, &out));
	entity_int_set_i64(&a, INT64_MIN);
	cr_assert(entity_int_get_i64(&a, &out));
	cr_assert_eq(out, INT64_MIN);
	assert_encodes_as(&a, INT64_MIN);
	entity_int_free(&a);
}

Test(entity_int, random_sums_agree_with_128_bit_arithmetic)
{
	srand(12345);
	struct entity_int acc = {0};
	i128 ref = 0;
	for (int k = 0; k < 20000; k++) {
		/* a random delta of 1 to 95 bits, either sign; the reference
		 * stays far inside 128 bits */
		int bits = 1 + rand() % 95;
		i128 d = 0;
		for (int b = 0; b < bits; b += 15)
			d = (d << 15) | (rand() & 0x7fff);
		d &= ((i128)1 << bits) - 1;
		if (rand() & 1)
			d = -d;
		if (ref + d > ((i128)1 << 120) || ref + d < -((i128)1 << 120))
			d = -d;
		struct entity_int delta = from_i128(d);
		cr_assert_eq(entity_int_add(&acc, &delta), 0);
		entity_int_free(&delta);
		ref += d;
		if (k % 97 == 0 || (ref > -1000 && ref < 1000))
			assert_encodes_as(&acc, ref);
	}
	assert_encodes_as(&acc, ref);
	entity_int_free(&acc);
}

Test(entity_int, hundreds_of_bytes_carry_through)
{
	/* 2^2400 - 1: 300 bytes of 0xff, a LARGE_BIG_EXT */
	size_t n = 300;
	unsigned char *t = malloc(6 + n);
	t[0] = ERL_LARGE_BIG_EXT;
	t[1] = 0;
	t[2] = 0;
	t[3] = (unsigned char)(n >> 8);
	t[4] = (unsigned char)n;
	t[5] = 0;
	memset(t + 6, 0xff, n);
	struct entity_int v = {0};
	size_t i = 0;
	cr_assert_eq(entity_int_decode((const char *)t, &i, &v), 0);
	cr_assert_eq(entity_int_add_i64(&v, 1), 0);
	ei_x_buff x;
	sn_x_new(&x);
	cr_assert_eq(entity_int_encode(&x, &v), 0);
	cr_assert_eq(x.index, 6 + 301, "one byte longer");
	cr_assert_eq((unsigned char)x.buff[0], ERL_LARGE_BIG_EXT);
	cr_assert_eq((unsigned char)x.buff[6 + 300], 1);
	for (size_t k = 0; k < 300; k++)
		cr_assert_eq(x.buff[6 + k], 0);
	cr_assert_eq(entity_int_add_i64(&v, -1), 0);
	x.index = 0;
	cr_assert_eq(entity_int_encode(&x, &v), 0);
	cr_assert_eq(x.index, 6 + 300);
	cr_assert_eq(memcmp(x.buff, t, 6 + n), 0, "back to the same bytes");
	ei_x_free(&x);
	free(t);
	entity_int_free(&v);
}
