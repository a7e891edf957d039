/*
 * test_term_encode.c — integers and atoms as the BEAM writes them
 * (etf/term_encode.h): the bytes at every boundary of each form, where ei
 * writes otherwise, and the texts refused. term_encode_SUITE compares
 * the same encoders with term_to_binary on a live BEAM.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include <criterion/criterion.h>
#include <ei.h>

#include "etf/term_encode.h"
#include "unit_helpers.h"

/* Encodes v, then checks the bytes. */
static void check_int(int64_t v, const unsigned char *want, size_t n)
{
	ei_x_buff x;
	sn_x_new(&x);
	cr_assert_eq(term_x_encode_int(&x, v), 0);
	cr_assert_eq((size_t)x.index, n, "%lld: %d bytes", (long long)v, x.index);
	cr_assert_eq(memcmp(x.buff, want, n), 0, "%lld", (long long)v);
	ei_x_free(&x);
}

static void check_uint(uint64_t v, const unsigned char *want, size_t n)
{
	ei_x_buff x;
	sn_x_new(&x);
	cr_assert_eq(term_x_encode_uint(&x, v), 0);
	cr_assert_eq((size_t)x.index, n, "%llu: %d bytes", (unsigned long long)v, x.index);
	cr_assert_eq(memcmp(x.buff, want, n), 0, "%llu", (unsigned long long)v);
	ei_x_free(&x);
}

#define INT(v, ...)                                                     \
	do {                                                            \
		static const unsigned char b[] = {__VA_ARGS__};         \
		check_int((v), b, sizeof b);                            \
	} while (0)
#define UINT(v, ...)                                                    \
	do {                                                            \
		static const unsigned char b[] = {__VA_ARGS__};         \
		check_uint((v), b, sizeof b);                           \
	} while (0)

Test(term_encode, small_integers)
{
	INT(0, 97, 0);
	INT(255, 97, 255);
	UINT(0, 97, 0);
	UINT(255, 97, 255);
}

Test(term_encode, every_32_bit_integer_is_integer_ext)
{
	INT(256, 98, 0, 0, 1, 0);
	INT(-1, 98, 0xff, 0xff, 0xff, 0xff);
	/* ei stops at 28 bits: 2^27 was SMALL_BIG_EXT (6e 04 00 00 00 00 08). */
	INT(134217728, 98, 0x08, 0, 0, 0);
	INT(-134217729, 98, 0xf7, 0xff, 0xff, 0xff);
	INT(INT32_MAX, 98, 0x7f, 0xff, 0xff, 0xff);
	INT(INT32_MIN, 98, 0x80, 0, 0, 0);
	UINT(INT32_MAX, 98, 0x7f, 0xff, 0xff, 0xff);
}

Test(term_encode, beyond_32_bits_small_big_ext_of_as_few_bytes_as_it_takes)
{
	INT((int64_t)INT32_MAX + 1, 110, 4, 0, 0, 0, 0, 0x80);
	INT((int64_t)INT32_MIN - 1, 110, 4, 1, 1, 0, 0, 0x80);
	INT((int64_t)1 << 32, 110, 5, 0, 0, 0, 0, 0, 1);
	INT(INT64_MAX, 110, 8, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f);
	INT(INT64_MIN, 110, 8, 1, 0, 0, 0, 0, 0, 0, 0, 0x80);
	UINT((uint64_t)INT32_MAX + 1, 110, 4, 0, 0, 0, 0, 0x80);
	UINT(UINT64_MAX, 110, 8, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff);
}

Test(term_encode, atoms_are_utf8)
{
	ei_x_buff x;
	sn_x_new(&x);
	cr_assert_eq(term_x_encode_atom(&x, "n\xc3\xa9@h"), 0); /* né@h: 4 bytes, 4 characters */
	static const unsigned char want[] = {119, 5, 'n', 0xc3, 0xa9, '@', 'h'};
	cr_assert_eq((size_t)x.index, sizeof want);
	cr_assert_eq(memcmp(x.buff, want, sizeof want), 0, "not each byte as a Latin-1 letter");
	x.index = 0;
	cr_assert_eq(term_x_encode_atom(&x, ""), 0);
	cr_assert_eq(x.index, 2);
	cr_assert_eq((unsigned char)x.buff[0], 119);
	cr_assert_eq(x.buff[1], 0);
	ei_x_free(&x);
}

Test(term_encode, long_atoms_take_atom_utf8_ext)
{
	/* 100 characters of 3 bytes: 300 bytes. */
	char text[301];
	for (int k = 0; k < 100; k++)
		memcpy(text + 3 * k, "\xe6\x97\xa5", 3);
	text[300] = '\0';
	ei_x_buff x;
	sn_x_new(&x);
	cr_assert_eq(term_x_encode_atom(&x, text), 0);
	cr_assert_eq(x.index, 3 + 300);
	cr_assert_eq((unsigned char)x.buff[0], 118);
	cr_assert_eq((unsigned char)x.buff[1], 1);
	cr_assert_eq((unsigned char)x.buff[2], 300 - 256);
	ei_x_free(&x);
}

Test(term_encode, texts_no_atom_can_hold_are_refused)
{
	char many[257];
	memset(many, 'a', 256);
	many[256] = '\0';
	const char *const bad[] = {"\xff", "a\xc3", "\xe6\x97", many};
	for (size_t k = 0; k < SN_ARRAY_LEN(bad); k++) {
		ei_x_buff x;
		sn_x_new(&x);
		cr_assert_eq(term_x_encode_atom(&x, bad[k]), -EINVAL, "text %zu", k);
		cr_assert_eq(x.index, 0, "nothing written");
		ei_x_free(&x);
	}
}
