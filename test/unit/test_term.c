/*
 * test_term.c — term_validate and the term helpers.
 *
 * Every valid term is checked whole, at an offset with bytes after it, and
 * cut at every byte: the external format is self-delimiting, so no strict
 * prefix of a term is a term, and each one must be refused without moving
 * the index. Inputs live in exact-size heap blocks so an over-read is an
 * AddressSanitizer report, not a silent pass.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <ei.h>

#include "etf/term.h"
#include "etf/term_validate.h"
#include "unit_helpers.h"

/* ---- the checks every valid term goes through ---- */

static void check_valid(const char *what, const void *term, size_t len)
{
	char *b = sn_dup_exact(term, len);
	size_t idx = 0;
	cr_assert_eq(term_validate(b, len, &idx), 0, "%s: whole term (%zu bytes) refused", what, len);
	cr_assert_eq(idx, len, "%s: idx %zu after validate, expected %zu", what, idx, len);

	/* term_skip must agree with the validator on where the term ends, and
	 * so must ei, whose decoders plugins run on validated terms. */
	size_t skipped = 0;
	term_skip(b, &skipped);
	cr_assert_eq(skipped, len, "%s: term_skip ended at %zu, expected %zu", what, skipped, len);
	int ei_end = 0;
	cr_assert_eq(ei_skip_term(b, &ei_end), 0, "%s: ei_skip_term failed", what);
	cr_assert_eq((size_t)ei_end, len, "%s: ei_skip_term ended at %d, expected %zu", what, ei_end, len);
	free(b);

	/* Not at the start of the buffer, and followed by unrelated bytes: the
	 * index lands at the end of the term, not of the buffer. */
	size_t pre = 3, post = 4;
	char *c = malloc(pre + len + post);
	cr_assert_not_null(c);
	memset(c, 0x61, pre + len + post);
	memcpy(c + pre, term, len);
	idx = pre;
	cr_assert_eq(term_validate(c, pre + len + post, &idx), 0, "%s: refused at an offset", what);
	cr_assert_eq(idx, pre + len, "%s: idx %zu at an offset, expected %zu", what, idx, pre + len);
	free(c);

	for (size_t k = 0; k < len; k++) {
		char *p = sn_dup_exact(term, k);
		idx = 0;
		int rc = term_validate(p, k, &idx);
		cr_assert_eq(rc, -EPROTO, "%s: prefix of %zu/%zu bytes gave %d", what, k, len, rc);
		cr_assert_eq(idx, 0, "%s: prefix of %zu bytes moved idx to %zu", what, k, idx);
		free(p);
	}
}

static void check_x(const char *what, ei_x_buff *x)
{
	check_valid(what, x->buff, (size_t)x->index);
	ei_x_free(x);
}

static void check_invalid(const char *what, const void *bytes, size_t len)
{
	char *b = sn_dup_exact(bytes, len);
	size_t idx = 0;
	int rc = term_validate(b, len, &idx);
	cr_assert_eq(rc, -EPROTO, "%s: accepted (rc %d)", what, rc);
	cr_assert_eq(idx, 0, "%s: idx moved to %zu", what, idx);
	free(b);
}

#define CHECK_LIT(what, arr) check_valid(what, arr, sizeof arr)
#define CHECK_BAD(what, arr) check_invalid(what, arr, sizeof arr)

/* ---- numbers ---- */

Test(term, small_and_32bit_integers)
{
	const long values[] = {0, 1, 255, 256, -1, -256, 65536, 2147483647L, -2147483647L - 1};
	for (size_t i = 0; i < SN_ARRAY_LEN(values); i++) {
		ei_x_buff x;
		sn_x_new(&x);
		cr_assert_eq(ei_x_encode_long(&x, values[i]), 0);
		char what[64];
		snprintf(what, sizeof what, "integer %ld", values[i]);
		check_x(what, &x);
	}
}

Test(term, integers_beyond_32_bits)
{
	const long long values[] = {1LL << 40, -(1LL << 40), INT64_MAX, INT64_MIN};
	for (size_t i = 0; i < SN_ARRAY_LEN(values); i++) {
		ei_x_buff x;
		sn_x_new(&x);
		cr_assert_eq(ei_x_encode_longlong(&x, values[i]), 0);
		cr_assert_eq((unsigned char)x.buff[0], ERL_SMALL_BIG_EXT);
		check_x("64-bit integer", &x);
	}
	ei_x_buff x;
	sn_x_new(&x);
	cr_assert_eq(ei_x_encode_ulonglong(&x, UINT64_MAX), 0);
	check_x("UINT64_MAX", &x);
}

Test(term, bignums)
{
	/* term_to_binary(1 bsl 100): SMALL_BIG_EXT, 13 little-endian digits. */
	static const uint8_t small_big[] = {110, 13, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 16};
	CHECK_LIT("1 bsl 100", small_big);
	/* A negative one. */
	static const uint8_t neg_big[] = {110, 9, 1, 1, 2, 3, 4, 5, 6, 7, 8, 9};
	CHECK_LIT("negative bignum", neg_big);

	/* 256 digits need LARGE_BIG_EXT (-(1 bsl 2047) and friends). */
	uint8_t large[1 + 4 + 1 + 256];
	large[0] = ERL_LARGE_BIG_EXT;
	sn_put32(large + 1, 256);
	large[5] = 1;
	for (size_t i = 0; i < 256; i++)
		large[6 + i] = (uint8_t)(i * 7 + 1);
	CHECK_LIT("large bignum", large);
}

Test(term, floats)
{
	const double values[] = {0.0, 1.5, -3.25e300, 1e-300};
	for (size_t i = 0; i < SN_ARRAY_LEN(values); i++) {
		ei_x_buff x;
		sn_x_new(&x);
		cr_assert_eq(ei_x_encode_double(&x, values[i]), 0);
		cr_assert_eq((unsigned char)x.buff[0], NEW_FLOAT_EXT);
		check_x("new float", &x);
	}
	/* The old text float: 31 bytes of "%.20e" padded with NULs. */
	uint8_t old[32] = {ERL_FLOAT_EXT};
	snprintf((char *)old + 1, 31, "%.20e", 1.5);
	CHECK_LIT("old float", old);
}

/* ---- atoms ---- */

Test(term, atoms_latin1_and_utf8)
{
	static const uint8_t atom_ext[] = {100, 0, 5, 'h', 'e', 'l', 'l', 'o'};
	static const uint8_t small_atom[] = {115, 3, 'a', 'b', 'c'};
	static const uint8_t latin1_e_acute[] = {100, 0, 4, 'c', 'a', 'f', 0xE9};
	static const uint8_t atom_utf8[] = {118, 0, 2, 0xC3, 0xB6};
	static const uint8_t small_utf8[] = {119, 8, 's', 'm', 0xC3, 0xB6, 'r', 'g', 0xC3, 0xA5};
	static const uint8_t empty_atom[] = {119, 0};
	CHECK_LIT("ATOM_EXT", atom_ext);
	CHECK_LIT("SMALL_ATOM_EXT", small_atom);
	CHECK_LIT("latin1 atom", latin1_e_acute);
	CHECK_LIT("ATOM_UTF8_EXT", atom_utf8);
	CHECK_LIT("SMALL_ATOM_UTF8_EXT", small_utf8);
	CHECK_LIT("empty atom", empty_atom);

	ei_x_buff x;
	sn_x_new(&x);
	cr_assert_eq(ei_x_encode_atom(&x, "sm\xC3\xB6rg\xC3\xA5s"), 0);
	check_x("ei utf8 atom", &x);

	/* 255 two-byte characters: 510 bytes, the long form. */
	uint8_t long_atom[3 + 510];
	long_atom[0] = ERL_ATOM_UTF8_EXT;
	sn_put16(long_atom + 1, 510);
	for (size_t i = 0; i < 255; i++) {
		long_atom[3 + 2 * i] = 0xC3;
		long_atom[4 + 2 * i] = 0xB6;
	}
	CHECK_LIT("510-byte utf8 atom", long_atom);
}

Test(term, atoms_hold_255_characters_as_binary_to_term_takes_them)
{
	/* 255 four-byte characters: 1020 bytes, the longest UTF-8 atom. */
	uint8_t b[3 + 1024];
	b[0] = ERL_ATOM_UTF8_EXT;
	for (size_t k = 0; k < 256; k++)
		memcpy(b + 3 + 4 * k, "\xF0\x9F\x98\x80", 4);
	sn_put16(b + 1, 1020);
	check_valid("255 four-byte characters", b, 3 + 1020);
	sn_put16(b + 1, 1024);
	check_invalid("256 four-byte characters", b, 3 + 1024);
	/* 255 and 256 characters of one byte, in every atom tag. */
	memset(b + 3, 'a', 256);
	static const uint8_t long_tags[] = {ERL_ATOM_EXT, ERL_ATOM_UTF8_EXT};
	for (size_t k = 0; k < 2; k++) {
		b[0] = long_tags[k];
		sn_put16(b + 1, 255);
		check_valid("255 characters", b, 3 + 255);
		sn_put16(b + 1, 256);
		check_invalid("256 characters", b, 3 + 256);
	}
	uint8_t small[2 + 255];
	small[0] = ERL_SMALL_ATOM_EXT;
	small[1] = 255;
	memset(small + 2, 0xE9, 255);
	check_valid("255 Latin-1 characters", small, sizeof small);
}

Test(term, utf8_atoms_must_be_well_formed)
{
	static const struct {
		uint8_t bytes[6];
		size_t n;
		bool ok;
	} cases[] = {
		{{0xC3, 0xA9}, 2, true},          {{0xC3}, 1, false},                 {{0xA9}, 1, false},
		{{0xC0, 0x80}, 2, false},         {{0xC1, 0xBF}, 2, false},           {{0xE0, 0x80, 0x80}, 3, false},
		{{0xE0, 0xA0, 0x80}, 3, true},    {{0xED, 0x9F, 0xBF}, 3, true},      {{0xED, 0xA0, 0x80}, 3, false},
		{{0xEF, 0xBF, 0xBF}, 3, true},    {{0xF0, 0x8F, 0xBF, 0xBF}, 4, false}, {{0xF0, 0x90, 0x80, 0x80}, 4, true},
		{{0xF4, 0x8F, 0xBF, 0xBF}, 4, true}, {{0xF4, 0x90, 0x80, 0x80}, 4, false}, {{0xF5, 0x80, 0x80, 0x80}, 4, false},
		{{0xFF}, 1, false},               {{0xC3, 0x41}, 2, false},           {{0}, 1, true},
		{{'a', 0xE2, 0x82}, 3, false},
	};
	for (size_t k = 0; k < SN_ARRAY_LEN(cases); k++) {
		uint8_t b[2 + 6];
		b[0] = ERL_SMALL_ATOM_UTF8_EXT;
		b[1] = (uint8_t)cases[k].n;
		memcpy(b + 2, cases[k].bytes, cases[k].n);
		if (cases[k].ok)
			check_valid("well-formed UTF-8", b, 2 + cases[k].n);
		else
			check_invalid("ill-formed UTF-8", b, 2 + cases[k].n);
		/* The same text as Latin-1 is always an atom. */
		b[0] = ERL_SMALL_ATOM_EXT;
		check_valid("the same bytes as Latin-1", b, 2 + cases[k].n);
	}
}

/* ---- strings, lists, tuples, maps ---- */

Test(term, strings)
{
	ei_x_buff x;
	sn_x_new(&x);
	cr_assert_eq(ei_x_encode_string(&x, "hello, world"), 0);
	cr_assert_eq((unsigned char)x.buff[0], ERL_STRING_EXT);
	check_x("string", &x);

	sn_x_new(&x);
	cr_assert_eq(ei_x_encode_string(&x, ""), 0);
	check_x("empty string", &x);

	char bytes[300];
	memset(bytes, 'z', sizeof bytes);
	sn_x_new(&x);
	cr_assert_eq(ei_x_encode_string_len(&x, bytes, (int)sizeof bytes), 0);
	check_x("300-byte string", &x);
}

Test(term, proper_lists)
{
	ei_x_buff x;
	sn_x_new(&x);
	cr_assert_eq(ei_x_encode_list_header(&x, 3), 0);
	cr_assert_eq(ei_x_encode_long(&x, 1), 0);
	cr_assert_eq(ei_x_encode_atom(&x, "two"), 0);
	cr_assert_eq(ei_x_encode_list_header(&x, 1), 0); /* [[]] as the third */
	cr_assert_eq(ei_x_encode_empty_list(&x), 0);
	cr_assert_eq(ei_x_encode_empty_list(&x), 0);
	cr_assert_eq(ei_x_encode_empty_list(&x), 0);
	check_x("[1, two, [[]]]", &x);

	sn_x_new(&x);
	cr_assert_eq(ei_x_encode_empty_list(&x), 0);
	check_x("[]", &x);

	sn_x_new(&x);
	cr_assert_eq(ei_x_encode_list_header(&x, 200), 0);
	for (long i = 0; i < 200; i++)
		cr_assert_eq(ei_x_encode_long(&x, i * 1000), 0);
	cr_assert_eq(ei_x_encode_empty_list(&x), 0);
	check_x("200-element list", &x);
}

Test(term, improper_lists)
{
	ei_x_buff x;
	sn_x_new(&x);
	cr_assert_eq(ei_x_encode_list_header(&x, 1), 0);
	cr_assert_eq(ei_x_encode_long(&x, 1), 0);
	cr_assert_eq(ei_x_encode_long(&x, 2), 0); /* the tail */
	check_x("[1 | 2]", &x);

	sn_x_new(&x);
	cr_assert_eq(ei_x_encode_list_header(&x, 2), 0);
	cr_assert_eq(ei_x_encode_atom(&x, "a"), 0);
	cr_assert_eq(ei_x_encode_atom(&x, "b"), 0);
	cr_assert_eq(ei_x_encode_tuple_header(&x, 1), 0); /* tail {c} */
	cr_assert_eq(ei_x_encode_atom(&x, "c"), 0);
	check_x("[a, b | {c}]", &x);
}

Test(term, tuples)
{
	ei_x_buff x;
	sn_x_new(&x);
	cr_assert_eq(ei_x_encode_tuple_header(&x, 0), 0);
	check_x("{}", &x);

	sn_x_new(&x);
	cr_assert_eq(ei_x_encode_tuple_header(&x, 2), 0);
	cr_assert_eq(ei_x_encode_atom(&x, "a"), 0);
	cr_assert_eq(ei_x_encode_tuple_header(&x, 2), 0);
	cr_assert_eq(ei_x_encode_atom(&x, "b"), 0);
	cr_assert_eq(ei_x_encode_tuple_header(&x, 3), 0);
	cr_assert_eq(ei_x_encode_atom(&x, "c"), 0);
	cr_assert_eq(ei_x_encode_tuple_header(&x, 0), 0);
	cr_assert_eq(ei_x_encode_long(&x, 7), 0);
	check_x("{a, {b, {c, {}, 7}}}", &x);

	sn_x_new(&x);
	cr_assert_eq(ei_x_encode_tuple_header(&x, 300), 0);
	cr_assert_eq((unsigned char)x.buff[0], ERL_LARGE_TUPLE_EXT);
	for (int i = 0; i < 300; i++)
		cr_assert_eq(ei_x_encode_atom(&x, i % 2 ? "odd" : "even"), 0);
	check_x("300-tuple", &x);
}

Test(term, maps)
{
	ei_x_buff x;
	sn_x_new(&x);
	cr_assert_eq(ei_x_encode_map_header(&x, 0), 0);
	check_x("#{}", &x);

	sn_x_new(&x);
	cr_assert_eq(ei_x_encode_map_header(&x, 2), 0);
	cr_assert_eq(ei_x_encode_atom(&x, "a"), 0);
	cr_assert_eq(ei_x_encode_long(&x, 1), 0);
	cr_assert_eq(ei_x_encode_binary(&x, "key", 3), 0);
	cr_assert_eq(ei_x_encode_map_header(&x, 1), 0);
	cr_assert_eq(ei_x_encode_tuple_header(&x, 0), 0);
	cr_assert_eq(ei_x_encode_list_header(&x, 1), 0);
	cr_assert_eq(ei_x_encode_atom(&x, "x"), 0);
	cr_assert_eq(ei_x_encode_empty_list(&x), 0);
	check_x("#{a => 1, <<\"key\">> => #{{} => [x]}}", &x);
}

/* ---- binaries ---- */

Test(term, binaries)
{
	ei_x_buff x;
	sn_x_new(&x);
	cr_assert_eq(ei_x_encode_binary(&x, "", 0), 0);
	check_x("<<>>", &x);

	sn_x_new(&x);
	cr_assert_eq(ei_x_encode_binary(&x, "abc", 3), 0);
	check_x("<<\"abc\">>", &x);

	char big[1000];
	for (size_t i = 0; i < sizeof big; i++)
		big[i] = (char)i;
	sn_x_new(&x);
	cr_assert_eq(ei_x_encode_binary(&x, big, (int)sizeof big), 0);
	check_x("1000-byte binary", &x);
}

Test(term, bitstrings)
{
	/* term_to_binary(<<1:3>>) without the version byte. */
	static const uint8_t one_in_3_bits[] = {77, 0, 0, 0, 1, 3, 32};
	CHECK_LIT("<<1:3>>", one_in_3_bits);

	ei_x_buff x;
	sn_x_new(&x);
	const char bits[2] = {(char)0xFF, (char)0xF8};
	cr_assert_eq(ei_x_encode_bitstring(&x, bits, 0, 13), 0);
	cr_assert_eq((unsigned char)x.buff[0], ERL_BIT_BINARY_EXT);
	check_x("13-bit bitstring", &x);
}

/* ---- pids, references, ports ---- */

Test(term, pids)
{
	ei_x_buff x;
	sn_x_new(&x);
	erlang_pid p = sn_pid("peer@127.0.0.1", 0x12345, 0x7fff);
	cr_assert_eq(ei_x_encode_pid(&x, &p), 0);
	cr_assert_eq((unsigned char)x.buff[0], ERL_NEW_PID_EXT);
	check_x("NEW_PID_EXT", &x);

	/* PID_EXT: Node, ID:4, Serial:4, Creation:1. */
	static const uint8_t old_pid[] = {103, 100, 0, 3, 'a', '@', 'b', 0, 0, 0, 1, 0, 0, 0, 2, 3};
	CHECK_LIT("PID_EXT", old_pid);
}

Test(term, references)
{
	ei_x_buff x;
	sn_x_new(&x);
	erlang_ref r = sn_ref("peer@127.0.0.1", 42);
	cr_assert_eq(ei_x_encode_ref(&x, &r), 0);
	cr_assert_eq((unsigned char)x.buff[0], ERL_NEWER_REFERENCE_EXT);
	check_x("NEWER_REFERENCE_EXT", &x);

	/* Five words, the most a reference (with a pid inside) carries. */
	r.len = 5;
	sn_x_new(&x);
	cr_assert_eq(ei_x_encode_ref(&x, &r), 0);
	check_x("five-word reference", &x);

	static const uint8_t new_ref[] = {114, 0, 1, 100, 0, 3, 'a', '@', 'b', 1, 0, 0, 0, 7};
	static const uint8_t old_ref[] = {101, 100, 0, 3, 'a', '@', 'b', 0, 0, 0, 7, 1};
	CHECK_LIT("NEW_REFERENCE_EXT", new_ref);
	CHECK_LIT("REFERENCE_EXT", old_ref);
}

Test(term, ports)
{
	erlang_port p;
	memset(&p, 0, sizeof p);
	strcpy(p.node, "peer@127.0.0.1");
	p.id = 5;
	p.creation = 3;
	ei_x_buff x;
	sn_x_new(&x);
	cr_assert_eq(ei_x_encode_port(&x, &p), 0);
	cr_assert_eq((unsigned char)x.buff[0], ERL_NEW_PORT_EXT);
	check_x("NEW_PORT_EXT", &x);

	p.id = 1ULL << 40; /* needs the 64-bit id of V4_PORT_EXT */
	sn_x_new(&x);
	cr_assert_eq(ei_x_encode_port(&x, &p), 0);
	cr_assert_eq((unsigned char)x.buff[0], ERL_V4_PORT_EXT);
	check_x("V4_PORT_EXT", &x);

	static const uint8_t old_port[] = {102, 100, 0, 3, 'a', '@', 'b', 0, 0, 0, 7, 1};
	CHECK_LIT("PORT_EXT", old_port);
}

/* ---- funs, as an OTP 25 node encodes them ---- */

/* term_to_binary(fun erlang:abs/1), version byte dropped. */
static const uint8_t fun_erlang_abs[] = {113, 100, 0, 6, 101, 114, 108, 97, 110, 103,
					 100, 0, 3, 97, 98, 115, 97, 1};
/* term_to_binary(fun lists:map/2). */
static const uint8_t fun_lists_map[] = {113, 100, 0, 5, 108, 105, 115, 116, 115,
					100, 0, 3, 109, 97, 112, 97, 2};
/* term_to_binary(lf:f(7)) where `f(X) -> fun(Y) -> Y + X end.`: a local fun
 * with one free variable (7). */
static const uint8_t fun_local[] = {
	112, 0, 0, 0, 72, 1, 56, 56, 90, 154, 146, 233, 193, 30, 112, 244, 224, 29, 31, 15, 120, 186,
	0, 0, 0, 0, 0, 0, 0, 1, 100, 0, 2, 108, 102, 97, 0, 98, 1, 193, 194, 212, 88, 100, 0, 13,
	110, 111, 110, 111, 100, 101, 64, 110, 111, 104, 111, 115, 116, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0,
	0, 0, 97, 7};
/* Offset of the module atom's 2-byte length inside fun_local. */
#define FUN_LOCAL_MODULE_LEN_AT 31

Test(term, funs)
{
	CHECK_LIT("fun erlang:abs/1", fun_erlang_abs);
	CHECK_LIT("fun lists:map/2", fun_lists_map);
	CHECK_LIT("local fun", fun_local);
}

Test(term, compound_term)
{
	ei_x_buff x;
	sn_x_new(&x);
	erlang_pid p = sn_pid("peer@127.0.0.1", 7, 0);
	erlang_ref r = sn_ref("peer@127.0.0.1", 9);
	cr_assert_eq(ei_x_encode_tuple_header(&x, 6), 0);
	cr_assert_eq(ei_x_encode_atom(&x, "ok"), 0);
	cr_assert_eq(ei_x_encode_pid(&x, &p), 0);
	cr_assert_eq(ei_x_encode_ref(&x, &r), 0);
	cr_assert_eq(ei_x_encode_map_header(&x, 1), 0);
	cr_assert_eq(ei_x_encode_string(&x, "k"), 0);
	cr_assert_eq(ei_x_encode_double(&x, 2.5), 0);
	cr_assert_eq(ei_x_append_buf(&x, (const char *)fun_local, (int)sizeof fun_local), 0);
	cr_assert_eq(ei_x_encode_list_header(&x, 2), 0);
	cr_assert_eq(ei_x_encode_longlong(&x, 1LL << 50), 0);
	cr_assert_eq(ei_x_encode_binary(&x, "x", 1), 0);
	cr_assert_eq(ei_x_encode_atom(&x, "tail"), 0);
	check_x("compound", &x);
}

/* ---- lies ---- */

Test(term, lying_list_length)
{
	static const uint8_t huge[] = {108, 0xFF, 0xFF, 0xFF, 0xFF, 106};
	static const uint8_t two_but_one[] = {108, 0, 0, 0, 2, 97, 1, 106};
	CHECK_BAD("list of 2^32-1 elements", huge);
	CHECK_BAD("list claiming 2 elements, holding 1", two_but_one);
}

Test(term, lying_tuple_and_map_arity)
{
	static const uint8_t large_tuple[] = {105, 0xFF, 0xFF, 0xFF, 0xFF, 97, 1};
	static const uint8_t small_tuple[] = {104, 255, 97, 1, 97, 2};
	static const uint8_t map[] = {116, 0xFF, 0xFF, 0xFF, 0xFF, 97, 1, 97, 2};
	static const uint8_t map_half[] = {116, 0, 0, 0, 1, 97, 1}; /* key without value */
	CHECK_BAD("tuple of 2^32-1 elements", large_tuple);
	CHECK_BAD("255-tuple of 2 elements", small_tuple);
	CHECK_BAD("map of 2^32-1 pairs", map);
	CHECK_BAD("map pair without value", map_half);
}

Test(term, lying_byte_lengths)
{
	static const uint8_t binary[] = {109, 0, 0, 0, 10, 'a', 'b'};
	static const uint8_t binary_max[] = {109, 0xFF, 0xFF, 0xFF, 0xFF, 'a'};
	static const uint8_t string[] = {107, 0, 10, 'a'};
	static const uint8_t atom[] = {119, 5, 'a'};
	static const uint8_t big[] = {110, 20, 0, 1};
	static const uint8_t large_big[] = {111, 0xFF, 0xFF, 0xFF, 0xFF, 0, 1};
	static const uint8_t bits[] = {77, 0, 0, 0, 9, 3, 32};
	static const uint8_t fun_size[] = {112, 0, 0, 0, 200, 1, 2, 3};
	CHECK_BAD("binary past the end", binary);
	CHECK_BAD("binary of 2^32-1 bytes", binary_max);
	CHECK_BAD("string past the end", string);
	CHECK_BAD("atom past the end", atom);
	CHECK_BAD("small big past the end", big);
	CHECK_BAD("large big past the end", large_big);
	CHECK_BAD("bitstring past the end", bits);
	CHECK_BAD("fun past the end", fun_size);
}

Test(term, malformed_fields)
{
	static const uint8_t bits_zero[] = {77, 0, 0, 0, 1, 0, 32};
	static const uint8_t bits_nine[] = {77, 0, 0, 0, 1, 9, 32};
	static const uint8_t bits_empty[] = {77, 0, 0, 0, 0, 3};
	static const uint8_t big_sign[] = {110, 1, 2, 5}; /* -5: any sign byte but 0 is negative */
	static const uint8_t fun_tiny[] = {112, 0, 0, 0, 3, 0, 0, 0};
	static const uint8_t ref_words[] = {90, 0, 6, 119, 1, 'a', 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 2,
					    0, 0, 0, 3, 0, 0, 0, 4, 0, 0, 0, 5, 0, 0, 0, 6};
	static const uint8_t pid_node_int[] = {88, 97, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1};
	CHECK_BAD("bitstring with 0 bits in the last byte", bits_zero);
	CHECK_BAD("bitstring with 9 bits in the last byte", bits_nine);
	CHECK_BAD("bitstring of no bytes and 3 bits", bits_empty);
	/* No bytes and no bits: <<>>, which the BEAM takes, alone and as a
	 * value in a map of two pairs (#{1 => 2, '' => <<>>}). */
	static const uint8_t empty_bits[] = {77, 0, 0, 0, 0, 0};
	static const uint8_t map_empty_bits[] = {116, 0, 0, 0, 2, 97, 1, 97, 2, 119, 0, 77, 0, 0, 0, 0, 0};
	CHECK_LIT("<<>> as a bit string", empty_bits);
	CHECK_LIT("a map holding <<>> as a bit string", map_empty_bits);
	check_valid("bignum sign 2", big_sign, sizeof big_sign);
	CHECK_BAD("fun size below 4", fun_tiny);
	CHECK_BAD("reference of 6 words", ref_words);
	CHECK_BAD("pid whose node is an integer", pid_node_int);
}

Test(term, fun_header_must_fit_its_size)
{
	/* The module atom of a local fun claims 200 bytes, more than the fun
	 * (and the buffer) holds. ei_decode_fun and ei_skip_term read such a
	 * header without bounds, so the validator must not pass it. */
	uint8_t b[sizeof fun_local];
	memcpy(b, fun_local, sizeof b);
	sn_put16(b + FUN_LOCAL_MODULE_LEN_AT, 200);
	CHECK_BAD("fun with a module atom longer than the fun", b);

	/* The module is not an atom at all. */
	memcpy(b, fun_local, sizeof b);
	b[FUN_LOCAL_MODULE_LEN_AT - 1] = ERL_SMALL_INTEGER_EXT;
	CHECK_BAD("fun whose module is an integer", b);

	/* Size too small for the header it claims to contain. */
	memcpy(b, fun_local, sizeof b);
	sn_put32(b + 1, 40);
	check_invalid("fun whose size cuts its header", b, 1 + 40);
}

/* ---- the verdict is the term's own: nothing after it counts ---- */

/* A FLOAT_EXT of "1." and 29 zeros: all 31 bytes of text, no NUL. */
static void fill_float_without_nul(uint8_t *at)
{
	at[0] = ERL_FLOAT_EXT;
	at[1] = '1';
	at[2] = '.';
	memset(at + 3, '0', 29);
}

Test(term, float_text_must_end_inside_the_term)
{
	/* {1.0} whose text runs on past its 31 bytes, "0" and a NUL, into the
	 * bytes after the term (found by fuzzing, 680163312e30..3000): the
	 * BEAM reads on to that NUL. Accepted with the bytes after it, the
	 * term could not be skipped in an exact copy without reading past. */
	uint8_t with_after[36] = {ERL_SMALL_TUPLE_EXT, 1};
	fill_float_without_nul(with_after + 2);
	with_after[34] = '0';
	with_after[35] = 0;
	CHECK_BAD("text float running into the bytes after it", with_after);
	check_invalid("the same term alone", with_after, 34);
	double v;
	cr_assert_eq(term_float_text_value((const char *)with_after + 3, &v), -EPROTO);

	/* Its NUL in the last byte of the field: taken, and the same alone. */
	with_after[33] = 0;
	check_valid("text float with its NUL in byte 31", with_after, 34);
	cr_assert_eq(term_float_text_value((const char *)with_after + 3, &v), 0);
	cr_assert_float_eq(v, 1.0, 0.0);
}

/* Appends a local fun as an OTP 25 node writes one (NEW_FUN_EXT): module
 * 'lf', OldIndex 0, OldUniq 7, then `pid` and `nfree` free variables
 * already encoded in `vars`. Its Size is its length plus `size_error`. */
static void put_fun(ei_x_buff *x, const void *pid, size_t pid_len, uint32_t nfree, const void *vars,
		    size_t vars_len, int size_error)
{
	int start = x->index;
	uint8_t head[30] = {ERL_NEW_FUN_EXT};
	head[5] = 1; /* Arity */
	for (int k = 0; k < 16; k++)
		head[6 + k] = (uint8_t)(k * 17 + 3); /* Uniq */
	sn_put32(head + 26, nfree);
	static const uint8_t after_head[] = {119, 2, 'l', 'f', 97, 0, 98, 0, 0, 0, 7};
	cr_assert_eq(ei_x_append_buf(x, (const char *)head, sizeof head), 0);
	cr_assert_eq(ei_x_append_buf(x, (const char *)after_head, sizeof after_head), 0);
	cr_assert_eq(ei_x_append_buf(x, pid, (int)pid_len), 0);
	if (vars_len > 0)
		cr_assert_eq(ei_x_append_buf(x, vars, (int)vars_len), 0);
	sn_put32((uint8_t *)x->buff + start + 1, (uint32_t)((long)x->index - start - 1 + size_error));
}

/* <a@h.9.0>, as a fun's creator. */
static const uint8_t fun_pid[] = {88, 119, 3, 'a', '@', 'h', 0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 0, 1};

Test(term, a_fun_size_must_be_its_length)
{
	static const uint8_t seven[] = {97, 7};
	int errors[] = {1, -1, 26332 - 83, 1 << 20};
	ei_x_buff x;
	sn_x_new(&x);
	put_fun(&x, fun_pid, sizeof fun_pid, 1, seven, sizeof seven, 0);
	check_x("a fun of one free variable", &x);
	for (size_t k = 0; k < SN_ARRAY_LEN(errors); k++) {
		sn_x_new(&x);
		put_fun(&x, fun_pid, sizeof fun_pid, 1, seven, sizeof seven, errors[k]);
		check_invalid("a fun whose Size is off", x.buff, (size_t)x.index);
		/* ... also where the buffer holds as many bytes as it claims: ei
		 * would take the wrong end, or read 26 KB past the fun. */
		size_t claimed = 1 + sn_get32((uint8_t *)x.buff + 1);
		if (claimed > (size_t)x.index && claimed < 4096) {
			char *padded = calloc(1, claimed);
			cr_assert_not_null(padded);
			memcpy(padded, x.buff, (size_t)x.index);
			check_invalid("a fun whose Size reaches bytes after it", padded, claimed);
			free(padded);
		}
		ei_x_free(&x);
	}

	/* No free variables: Size is checked at once. */
	sn_x_new(&x);
	put_fun(&x, fun_pid, sizeof fun_pid, 0, NULL, 0, 0);
	check_x("a fun of no free variables", &x);
	sn_x_new(&x);
	put_fun(&x, fun_pid, sizeof fun_pid, 0, NULL, 0, 1);
	check_invalid("a fun of no free variables, Size one more", x.buff, (size_t)x.index);
	ei_x_free(&x);
}

Test(term, a_fun_holds_a_pid_and_plain_integers)
{
	static const uint8_t atom_pid[] = {119, 1, 'p'};
	static const uint8_t seven[] = {97, 7};
	ei_x_buff x;
	sn_x_new(&x);
	put_fun(&x, atom_pid, sizeof atom_pid, 1, seven, sizeof seven, 0);
	check_invalid("a fun whose Pid is an atom", x.buff, (size_t)x.index);
	ei_x_free(&x);

	/* OldIndex as [|0]: the BEAM unwraps it, ei does not. */
	sn_x_new(&x);
	put_fun(&x, fun_pid, sizeof fun_pid, 1, seven, sizeof seven, 0);
	uint8_t *b = (uint8_t *)x.buff;
	size_t old_index = 30 + 4; /* after the header and the module 'lf' */
	cr_assert_eq(b[old_index], ERL_SMALL_INTEGER_EXT);
	uint8_t wrapped[256];
	size_t n = (size_t)x.index;
	memcpy(wrapped, b, old_index);
	static const uint8_t wrap[] = {108, 0, 0, 0, 0};
	memcpy(wrapped + old_index, wrap, sizeof wrap);
	memcpy(wrapped + old_index + sizeof wrap, b + old_index, n - old_index);
	sn_put32(wrapped + 1, (uint32_t)(n + sizeof wrap - 1));
	check_invalid("a fun whose OldIndex is wrapped in an empty list", wrapped, n + sizeof wrap);
	ei_x_free(&x);

	static const uint8_t export_wrapped[] = {113, 119, 1, 'm', 119, 1, 'f', 108, 0, 0, 0, 0, 97, 2};
	CHECK_BAD("an export whose arity is wrapped in an empty list", export_wrapped);
}

Test(term, funs_inside_funs_end_where_their_sizes_say)
{
	static const uint8_t seven[] = {97, 7};
	ei_x_buff inner, outer;
	/* A fun as the last free variable: both end at the same byte. */
	sn_x_new(&inner);
	put_fun(&inner, fun_pid, sizeof fun_pid, 1, seven, sizeof seven, 0);
	sn_x_new(&outer);
	put_fun(&outer, fun_pid, sizeof fun_pid, 1, inner.buff, (size_t)inner.index, 0);
	check_x("a fun holding a fun", &outer);

	/* The inner fun's Size one short, the outer's right. */
	ei_x_buff bad;
	sn_x_new(&bad);
	put_fun(&bad, fun_pid, sizeof fun_pid, 1, seven, sizeof seven, -1);
	sn_x_new(&outer);
	put_fun(&outer, fun_pid, sizeof fun_pid, 1, bad.buff, (size_t)bad.index, 0);
	check_invalid("a fun holding a fun whose Size is off", outer.buff, (size_t)outer.index);
	ei_x_free(&outer);

	/* A fun, then an integer, as free variables. */
	ei_x_buff vars;
	sn_x_new(&vars);
	cr_assert_eq(ei_x_append_buf(&vars, inner.buff, inner.index), 0);
	cr_assert_eq(ei_x_append_buf(&vars, (const char *)seven, sizeof seven), 0);
	sn_x_new(&outer);
	put_fun(&outer, fun_pid, sizeof fun_pid, 2, vars.buff, (size_t)vars.index, 0);
	check_x("a fun holding a fun and 7", &outer);
	ei_x_free(&vars);
	ei_x_free(&inner);
	ei_x_free(&bad);

	/* Forty funs deep (the walk's own stack holds 8), in a tuple with an
	 * atom after them: validated whole, skipped by their sizes. */
	ei_x_buff deep;
	sn_x_new(&deep);
	cr_assert_eq(ei_x_append_buf(&deep, (const char *)seven, sizeof seven), 0);
	for (int k = 0; k < 40; k++) {
		ei_x_buff next;
		sn_x_new(&next);
		put_fun(&next, fun_pid, sizeof fun_pid, 1, deep.buff, (size_t)deep.index, 0);
		ei_x_free(&deep);
		deep = next;
	}
	ei_x_buff t;
	sn_x_new(&t);
	cr_assert_eq(ei_x_encode_tuple_header(&t, 2), 0);
	cr_assert_eq(ei_x_append_buf(&t, deep.buff, deep.index), 0);
	cr_assert_eq(ei_x_encode_atom(&t, "after"), 0);
	ei_x_free(&deep);
	check_x("forty funs deep", &t);
}

Test(term, atom_cache_refs_and_unknown_tags)
{
	static const uint8_t cache_ref[] = {82, 0};
	static const uint8_t old_fun[] = {117, 0, 0, 0, 0};
	static const uint8_t cache_in_tuple[] = {104, 2, 97, 1, 82, 3};
	CHECK_BAD("atom cache reference", cache_ref);
	CHECK_BAD("ERL_FUN_EXT", old_fun);
	CHECK_BAD("atom cache reference inside a tuple", cache_in_tuple);
	const uint8_t unknown[] = {0, 1, 60, 200, 255};
	for (size_t i = 0; i < sizeof unknown; i++)
		check_invalid("unknown tag", &unknown[i], 1);
}

Test(term, empty_input_and_index_past_end)
{
	char b[1] = {97};
	size_t idx = 0;
	cr_assert_eq(term_validate(b, 0, &idx), -EPROTO);
	cr_assert_eq(idx, 0);
	idx = 2;
	cr_assert_eq(term_validate(b, 1, &idx), -EPROTO);
	cr_assert_eq(idx, 2);
	idx = 1;
	cr_assert_eq(term_validate(b, 1, &idx), -EPROTO);
	cr_assert_eq(idx, 1);
}

/* ---- depth ---- */

/* `depth` nested 1-tuples around []: {{{...[]...}}}. */
static char *nested_tuples(size_t depth, size_t *len)
{
	*len = 2 * depth + 1;
	char *b = malloc(*len);
	cr_assert_not_null(b);
	for (size_t i = 0; i < depth; i++) {
		b[2 * i] = ERL_SMALL_TUPLE_EXT;
		b[2 * i + 1] = 1;
	}
	b[2 * depth] = ERL_NIL_EXT;
	return b;
}

Test(term, deep_tuple_nesting_validates)
{
	size_t len;
	char *b = nested_tuples(100000, &len);
	size_t idx = 0;
	cr_assert_eq(term_validate(b, len, &idx), 0);
	cr_assert_eq(idx, len);
	idx = 0;
	cr_assert_eq(term_validate(b, len - 1, &idx), -EPROTO);
	cr_assert_eq(idx, 0);
	free(b);
}

Test(term, deep_list_nesting_validates)
{
	/* [[[...]]]: each level is LIST_EXT of one element, then its tail. */
	const size_t depth = 100000;
	size_t len = 5 * depth + 1 + depth;
	char *b = malloc(len);
	cr_assert_not_null(b);
	for (size_t i = 0; i < depth; i++) {
		b[5 * i] = ERL_LIST_EXT;
		sn_put32((uint8_t *)b + 5 * i + 1, 1);
	}
	memset(b + 5 * depth, ERL_NIL_EXT, depth + 1);
	size_t idx = 0;
	cr_assert_eq(term_validate(b, len, &idx), 0);
	cr_assert_eq(idx, len);
	idx = 0;
	cr_assert_eq(term_validate(b, len - 1, &idx), -EPROTO);
	free(b);
}

Test(term, skip_of_deep_nesting_uses_no_stack)
{
	/* A peer may send a 2 MB message of a million nested tuples; skipping
	 * it (as gen_call and the router do) must not recurse per level. */
	size_t len;
	char *b = nested_tuples(1000000, &len);
	size_t idx = 0;
	cr_assert_eq(term_validate(b, len, &idx), 0);
	idx = 0;
	term_skip(b, &idx);
	cr_assert_eq(idx, len);
	free(b);
}

/* ---- helpers over validated terms ---- */

Test(term, is_atom)
{
	static const uint8_t latin1[] = {100, 0, 4, 'c', 'a', 'f', 0xE9};
	static const uint8_t small[] = {115, 2, 'o', 'k'};
	ei_x_buff x;
	sn_x_new(&x);
	cr_assert_eq(ei_x_encode_atom(&x, "$gen_call"), 0);
	cr_assert_eq(ei_x_encode_long(&x, 5), 0);
	cr_assert(term_is_atom(x.buff, 0, "$gen_call"));
	cr_assert_not(term_is_atom(x.buff, 0, "$gen_cast"));
	cr_assert_not(term_is_atom(x.buff, 0, "$gen_cal"));
	cr_assert_not(term_is_atom(x.buff, 11, "5"), "an integer is no atom");
	cr_assert(term_is_atom((const char *)latin1, 0, "caf\xC3\xA9"), "latin1 atoms compare as UTF-8");
	cr_assert(term_is_atom((const char *)small, 0, "ok"));
	ei_x_free(&x);
}

/* ---- term_atom_equals against what term_is_atom computed with ei ---- */

/* A text as code points, and its UTF-8 and (when every code point is below
 * 256) Latin-1 bytes. */
struct atom_text {
	uint32_t cp[1100];
	size_t n;
};

static size_t put_utf8(uint8_t *out, uint32_t cp)
{
	if (cp < 0x80) {
		out[0] = (uint8_t)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (uint8_t)(0xC0 | cp >> 6);
		out[1] = (uint8_t)(0x80 | (cp & 0x3F));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (uint8_t)(0xE0 | cp >> 12);
		out[1] = (uint8_t)(0x80 | (cp >> 6 & 0x3F));
		out[2] = (uint8_t)(0x80 | (cp & 0x3F));
		return 3;
	}
	out[0] = (uint8_t)(0xF0 | cp >> 18);
	out[1] = (uint8_t)(0x80 | (cp >> 12 & 0x3F));
	out[2] = (uint8_t)(0x80 | (cp >> 6 & 0x3F));
	out[3] = (uint8_t)(0x80 | (cp & 0x3F));
	return 4;
}

/* UTF-8 of t into out (room for 4 * t->n + 1); returns the length. */
static size_t text_utf8(const struct atom_text *t, char *out)
{
	size_t o = 0;
	for (size_t k = 0; k < t->n; k++)
		o += put_utf8((uint8_t *)out + o, t->cp[k]);
	out[o] = '\0';
	return o;
}

/* Encodes t with `tag`; false if the tag cannot hold it. */
static bool encode_atom(const struct atom_text *t, uint8_t tag, uint8_t *out, size_t *len)
{
	bool latin1 = tag == ERL_ATOM_EXT || tag == ERL_SMALL_ATOM_EXT;
	bool small = tag == ERL_SMALL_ATOM_EXT || tag == ERL_SMALL_ATOM_UTF8_EXT;
	size_t head = small ? 2 : 3, n = 0;
	for (size_t k = 0; k < t->n; k++) {
		if (latin1) {
			if (t->cp[k] > 255)
				return false;
			out[head + n++] = (uint8_t)t->cp[k];
		} else {
			n += put_utf8(out + head + n, t->cp[k]);
		}
	}
	if (n > (small ? 255u : 1020u))
		return false;
	out[0] = tag;
	if (small)
		out[1] = (uint8_t)n;
	else
		sn_put16(out + 1, (uint32_t)n);
	*len = head + n;
	return true;
}

/* False for Latin-1 text of more than TERM_ATOM_BUF - 1 bytes as UTF-8. */
static bool text_utf8_len_fits(const uint8_t *term)
{
	if (term[0] != ERL_ATOM_EXT && term[0] != ERL_SMALL_ATOM_EXT)
		return true;
	size_t n = term[0] == ERL_ATOM_EXT ? (size_t)term[1] << 8 | term[2] : term[1];
	const uint8_t *t = term + (term[0] == ERL_ATOM_EXT ? 3 : 2);
	size_t out = n;
	for (size_t k = 0; k < n; k++)
		out += t[k] >> 7;
	return out <= TERM_ATOM_BUF - 1;
}

/* term_is_atom as it was: ei decodes to UTF-8 into TERM_ATOM_BUF bytes,
 * then strcmp. ei accepts Latin-1 text of 1021 UTF-8 bytes by writing one
 * byte past that buffer (the NUL); term_atom_equals refuses it instead, so
 * here that case is "not equal" and the buffer has room for ei's write. */
static bool is_atom_as_before(const uint8_t *term, const char *name)
{
	char atom[TERM_ATOM_BUF + 8];
	int i = 0;
	erlang_char_encoding enc;
	if (ei_decode_atom_as((const char *)term, &i, atom, TERM_ATOM_BUF, ERLANG_UTF8, &enc, NULL) < 0)
		return false;
	return text_utf8_len_fits(term) && strcmp(atom, name) == 0;
}

static const uint8_t atom_tags[] = {ERL_ATOM_EXT, ERL_SMALL_ATOM_EXT, ERL_ATOM_UTF8_EXT, ERL_SMALL_ATOM_UTF8_EXT};

/* One text in every encoding that holds it, against a set of names: the
 * result is what ei and strcmp gave, the same for every encoding, and no
 * prefix of the term cut short matches anything (read in exact-size blocks,
 * so an over-read is a sanitizer report). */
static void check_atom_text(const char *what, const struct atom_text *t)
{
	static char utf8[4 * 1100 + 1];
	size_t ulen = text_utf8(t, utf8);
	char *names[6];
	size_t nnames = 0;
	/* Names are C strings: a text with a NUL is named up to it. */
	names[nnames++] = sn_dup_exact(utf8, ulen + 1);       /* itself */
	names[nnames++] = strdup("");                          /* empty */
	char *longer = malloc(ulen + 2);
	memcpy(longer, utf8, ulen);
	memcpy(longer + ulen, "x", 2);
	names[nnames++] = longer;                              /* one byte more */
	char *shorter = sn_dup_exact(utf8, ulen + 1);
	if (ulen > 0)
		shorter[ulen - 1] = '\0';
	names[nnames++] = shorter;                             /* one byte less */
	char *changed = sn_dup_exact(utf8, ulen + 1);
	if (ulen > 0)
		changed[ulen / 2] = changed[ulen / 2] == 'q' ? 'r' : 'q';
	names[nnames++] = changed;                             /* one byte differs */
	names[nnames++] = strdup("passivate");

	static uint8_t term[3 + 4 * 1100];
	int agreed[6];
	bool first = true;
	for (size_t g = 0; g < SN_ARRAY_LEN(atom_tags); g++) {
		size_t len;
		if (!encode_atom(t, atom_tags[g], term, &len))
			continue;
		char *whole = sn_dup_exact(term, len);
		for (size_t k = 0; k < nnames; k++) {
			bool want = is_atom_as_before(term, names[k]);
			bool got = term_atom_equals(whole, len, 0, names[k], strlen(names[k]));
			cr_assert_eq(got, want, "%s, tag %u, name %zu: %d, before %d", what, atom_tags[g], k, got, want);
			cr_assert_eq(term_is_atom(whole, 0, names[k]), want, "%s, tag %u: term_is_atom", what,
				     atom_tags[g]);
			if (first)
				agreed[k] = got;
			else
				cr_assert_eq(got, agreed[k], "%s: tag %u disagrees with another encoding", what,
					     atom_tags[g]);
		}
		first = false;

		/* term_get_atom reads the same text ei did, into exactly
		 * TERM_ATOM_BUF bytes, and refuses what does not fit. */
		char *got = malloc(TERM_ATOM_BUF);
		char want[TERM_ATOM_BUF + 8];
		int ei_i = 0;
		erlang_char_encoding enc;
		bool fits = ei_decode_atom_as((const char *)term, &ei_i, want, TERM_ATOM_BUF, ERLANG_UTF8, &enc, NULL) == 0 &&
			    text_utf8_len_fits(term);
		size_t idx = 0;
		int rc = term_get_atom(whole, &idx, got);
		if (fits) {
			cr_assert_eq(rc, 0, "%s, tag %u: term_get_atom refused", what, atom_tags[g]);
			cr_assert_eq(idx, len);
			cr_assert_eq(memcmp(got, want, ulen + 1), 0, "%s, tag %u: term_get_atom text", what,
				     atom_tags[g]);
		} else {
			cr_assert_eq(rc, -EPROTO, "%s, tag %u: term_get_atom took %zu UTF-8 bytes", what, atom_tags[g],
				     ulen);
			cr_assert_eq(idx, 0);
		}
		free(got);
		free(whole);

		/* At an offset, with bytes after it. */
		uint8_t *at = malloc(len + 5);
		memset(at, 'a', len + 5);
		memcpy(at + 2, term, len);
		cr_assert_eq(term_atom_equals((const char *)at, len + 5, 2, names[0], strlen(names[0])), agreed[0],
			     "%s, tag %u: at an offset", what, atom_tags[g]);
		free(at);

		for (size_t cut = 0; cut < len; cut++) {
			char *p = sn_dup_exact(term, cut);
			for (size_t k = 0; k < nnames; k++)
				cr_assert_not(term_atom_equals(p, cut, 0, names[k], strlen(names[k])),
					      "%s, tag %u: cut at %zu/%zu bytes matched name %zu", what, atom_tags[g],
					      cut, len, k);
			free(p);
		}
	}
	cr_assert_not(first, "%s: no encoding holds it", what);
	for (size_t k = 0; k < nnames; k++)
		free(names[k]);
}

static void text_of(struct atom_text *t, const char *ascii)
{
	t->n = 0;
	for (const char *c = ascii; *c; c++)
		t->cp[t->n++] = (unsigned char)*c;
}

Test(term, atom_equals_every_encoding_as_before)
{
	static struct atom_text t;
	static const char *words[] = {"", "ok", "$gen_call", "passivate", "passivat", "passivatee", "incr", "a"};
	for (size_t w = 0; w < SN_ARRAY_LEN(words); w++) {
		text_of(&t, words[w]);
		check_atom_text(words[w], &t);
	}

	/* Latin-1 characters: one, among ASCII, and all 255 non-NUL ones. */
	text_of(&t, "caf");
	t.cp[t.n++] = 0xE9;
	check_atom_text("caf\\xE9", &t);
	text_of(&t, "");
	t.cp[t.n++] = 0x80;
	t.cp[t.n++] = 0xBF;
	t.cp[t.n++] = 0xC0;
	t.cp[t.n++] = 0xFF;
	check_atom_text("latin1 edges", &t);
	t.n = 0;
	for (uint32_t c = 1; c < 256; c++)
		t.cp[t.n++] = c;
	check_atom_text("every latin1 character", &t);

	/* Beyond Latin-1: only the UTF-8 encodings hold these. */
	t.n = 0;
	t.cp[t.n++] = 'x';
	t.cp[t.n++] = 0x20AC;
	t.cp[t.n++] = 0x1F600;
	check_atom_text("euro and emoji", &t);

	/* A NUL inside: the text counted up to it, as strcmp did. */
	text_of(&t, "ok");
	t.cp[t.n++] = 0;
	t.cp[t.n++] = 'x';
	check_atom_text("ok NUL x", &t);
	t.n = 0;
	t.cp[t.n++] = 0;
	check_atom_text("NUL", &t);
	text_of(&t, "caf");
	t.cp[t.n++] = 0xE9;
	t.cp[t.n++] = 0;
	t.cp[t.n++] = 0xE9;
	check_atom_text("caf\\xE9 NUL \\xE9", &t);
}

Test(term, atom_equals_long_atoms_as_before)
{
	static struct atom_text t;
	/* Around the UTF-8 bound of TERM_ATOM_BUF - 1 = 1020 bytes, as ASCII,
	 * as Latin-1 characters of two UTF-8 bytes, and mixed. */
	static const size_t ascii_n[] = {255, 256, 1019, 1020};
	for (size_t a = 0; a < SN_ARRAY_LEN(ascii_n); a++) {
		for (t.n = 0; t.n < ascii_n[a]; t.n++)
			t.cp[t.n] = 'a' + (uint32_t)(t.n % 26);
		check_atom_text("long ascii", &t);
	}
	static const size_t mix[][2] = {{0, 255}, {0, 509}, {0, 510}, {0, 511}, {1, 509}, {2, 509},
					{3, 509}, {1018, 1}, {1019, 1}};
	for (size_t m = 0; m < SN_ARRAY_LEN(mix); m++) {
		t.n = 0;
		for (size_t k = 0; k < mix[m][0]; k++)
			t.cp[t.n++] = 'b';
		for (size_t k = 0; k < mix[m][1]; k++)
			t.cp[t.n++] = 0xE9;
		check_atom_text("long latin1", &t);
	}
	/* 255 four-byte characters: 1020 bytes, the longest UTF-8 atom. */
	t.n = 0;
	while (t.n < 255)
		t.cp[t.n++] = 0x1F600;
	check_atom_text("255 emoji", &t);
}

Test(term, get_atom)
{
	char out[TERM_ATOM_BUF];
	static const uint8_t latin1[] = {100, 0, 4, 'c', 'a', 'f', 0xE9, 97, 1};
	size_t idx = 0;
	cr_assert_eq(term_get_atom((const char *)latin1, &idx, out), 0);
	cr_assert_str_eq(out, "caf\xC3\xA9");
	cr_assert_eq(idx, 7);
	cr_assert_eq(term_get_atom((const char *)latin1, &idx, out), -EPROTO);
	cr_assert_eq(idx, 7, "a failed read leaves idx alone");

	/* The longest atom: 255 four-byte characters. */
	uint8_t big[3 + 1020];
	big[0] = ERL_ATOM_UTF8_EXT;
	sn_put16(big + 1, 1020);
	for (size_t i = 0; i < 255; i++)
		memcpy(big + 3 + 4 * i, "\xF0\x9F\x98\x80", 4);
	idx = 0;
	cr_assert_eq(term_get_atom((const char *)big, &idx, out), 0);
	cr_assert_eq(strlen(out), 1020);
	cr_assert_eq(idx, sizeof big);
}

Test(term, get_tuple)
{
	ei_x_buff x;
	sn_x_new(&x);
	cr_assert_eq(ei_x_encode_tuple_header(&x, 3), 0);
	cr_assert_eq(ei_x_encode_atom(&x, "a"), 0);
	cr_assert_eq(ei_x_encode_tuple_header(&x, 300), 0);
	size_t idx = 0;
	cr_assert_eq(term_get_tuple(x.buff, &idx), 3);
	cr_assert_eq(idx, 2);
	cr_assert_eq(term_get_tuple(x.buff, &idx), -1, "an atom is no tuple");
	cr_assert_eq(idx, 2);
	term_skip(x.buff, &idx);
	cr_assert_eq(term_get_tuple(x.buff, &idx), 300);
	cr_assert_eq(idx, (size_t)x.index);
	ei_x_free(&x);
}

Test(term, get_long_in_range)
{
	const long ok[] = {0, 1, 255, 256, 65536, 2147483647L};
	for (size_t i = 0; i < SN_ARRAY_LEN(ok); i++) {
		ei_x_buff x;
		sn_x_new(&x);
		cr_assert_eq(ei_x_encode_long(&x, ok[i]), 0);
		size_t idx = 0;
		long v = -5;
		cr_assert_eq(term_get_long(x.buff, &idx, &v), 0, "%ld refused", ok[i]);
		cr_assert_eq(v, ok[i]);
		cr_assert_eq(idx, (size_t)x.index);
		ei_x_free(&x);
	}
}

Test(term, get_long_out_of_range)
{
	/* The header promises a small non-negative integer (< 2^31): a
	 * negative or huge op or serial must not pass as one. */
	const long long bad[] = {-1, -2147483648LL, 2147483648LL, 1LL << 40};
	for (size_t i = 0; i < SN_ARRAY_LEN(bad); i++) {
		ei_x_buff x;
		sn_x_new(&x);
		cr_assert_eq(ei_x_encode_longlong(&x, bad[i]), 0);
		size_t idx = 0;
		long v = 77;
		cr_assert_eq(term_get_long(x.buff, &idx, &v), -EPROTO, "%lld accepted", bad[i]);
		cr_assert_eq(idx, 0);
		cr_assert_eq(v, 77);
		ei_x_free(&x);
	}
	ei_x_buff x;
	sn_x_new(&x);
	cr_assert_eq(ei_x_encode_atom(&x, "one"), 0);
	size_t idx = 0;
	long v;
	cr_assert_eq(term_get_long(x.buff, &idx, &v), -EPROTO);
	cr_assert_eq(idx, 0);
	ei_x_free(&x);
}

/* ---- building replies ---- */

Test(term, append_raw)
{
	ei_x_buff x;
	sn_x_new(&x);
	cr_assert_eq(term_x_append_raw(&x, "\x61\x05", 2), 0);
	cr_assert_eq(term_x_append_raw(&x, "", 0), 0);
	cr_assert_eq(x.index, 2);
	cr_assert_eq(memcmp(x.buff, "\x61\x05", 2), 0);
	ei_x_free(&x);
}

Test(term, error_atom)
{
	ei_x_buff x;
	sn_x_new(&x);
	cr_assert_eq(term_x_error_atom(&x, "timeout"), 0);
	char *s = NULL;
	int idx = 0;
	cr_assert_geq(ei_s_print_term(&s, x.buff, &idx), 0);
	cr_assert_str_eq(s, "{error, timeout}");
	cr_assert_eq(idx, x.index);
	free(s);
	ei_x_free(&x);
}

Test(term, error_tagged_raw_echoes_the_term)
{
	ei_x_buff raw;
	sn_x_new(&raw);
	cr_assert_eq(ei_x_encode_tuple_header(&raw, 3), 0);
	cr_assert_eq(ei_x_encode_atom(&raw, "foo"), 0);
	cr_assert_eq(ei_x_encode_list_header(&raw, 2), 0);
	cr_assert_eq(ei_x_encode_long(&raw, 1), 0);
	cr_assert_eq(ei_x_encode_long(&raw, 2), 0);
	cr_assert_eq(ei_x_encode_empty_list(&raw), 0);
	cr_assert_eq(ei_x_encode_binary(&raw, "ab", 2), 0);

	ei_x_buff x;
	sn_x_new(&x);
	cr_assert_eq(term_x_error_tagged_raw(&x, "bad_request", raw.buff, (size_t)raw.index), 0);

	size_t end = 0;
	cr_assert_eq(term_validate(x.buff, (size_t)x.index, &end), 0);
	cr_assert_eq(end, (size_t)x.index);

	int i = 0, arity;
	char atom[MAXATOMLEN_UTF8];
	cr_assert_eq(ei_decode_tuple_header(x.buff, &i, &arity), 0);
	cr_assert_eq(arity, 2);
	cr_assert_eq(ei_decode_atom(x.buff, &i, atom), 0);
	cr_assert_str_eq(atom, "error");
	cr_assert_eq(ei_decode_tuple_header(x.buff, &i, &arity), 0);
	cr_assert_eq(arity, 2);
	cr_assert_eq(ei_decode_atom(x.buff, &i, atom), 0);
	cr_assert_str_eq(atom, "bad_request");
	cr_assert_eq(x.index - i, raw.index);
	cr_assert_eq(memcmp(x.buff + i, raw.buff, (size_t)raw.index), 0, "Raw not echoed byte for byte");

	char *s = NULL;
	i = 0;
	cr_assert_geq(ei_s_print_term(&s, x.buff, &i), 0);
	cr_assert_str_eq(s, "{error, {bad_request, {foo, [1, 2], #Bin<97,98>}}}");
	free(s);
	ei_x_free(&x);
	ei_x_free(&raw);
}

Test(term, get_atom_too_long_for_the_buffer)
{
	/* 1020 latin1 bytes pass the validator's byte limit but become 2040
	 * UTF-8 bytes: reading the atom must fail, not overflow `out`. */
	uint8_t b[3 + 1020];
	b[0] = ERL_ATOM_EXT;
	sn_put16(b + 1, 1020);
	memset(b + 3, 0xE9, 1020);
	char *copy = sn_dup_exact(b, sizeof b);
	size_t idx = 0;
	/* The validator refuses it (over 255 characters); read without it,
	 * it must still be refused, not overflow. */
	cr_assert_eq(term_validate(copy, sizeof b, &idx), -EPROTO);
	char out[TERM_ATOM_BUF];
	idx = 0;
	cr_assert_eq(term_get_atom(copy, &idx, out), -EPROTO);
	cr_assert_eq(idx, 0);
	cr_assert_not(term_is_atom(copy, 0, "x"));
	free(copy);
}

Test(term, get_atom_one_byte_too_long_for_the_buffer)
{
	/* 3 ASCII and 509 Latin-1 bytes of 0xE9: 1021 bytes as UTF-8, one more
	 * than `out` holds with its NUL. ei_decode_atom_as accepted this and
	 * wrote past the buffer; term_get_atom refuses it. 1020 bytes fit. */
	uint8_t b[3 + 512];
	b[0] = ERL_ATOM_EXT;
	sn_put16(b + 1, 512);
	memset(b + 3, 'a', 3);
	memset(b + 6, 0xE9, 509);
	char *copy = sn_dup_exact(b, sizeof b);
	char *out = malloc(TERM_ATOM_BUF);
	cr_assert_not_null(out);
	size_t idx = 0;
	cr_assert_eq(term_get_atom(copy, &idx, out), -EPROTO);
	cr_assert_eq(idx, 0);
	free(copy);

	sn_put16(b + 1, 511); /* 2 ASCII, 509 Latin-1: 1020 bytes */
	memset(b + 5, 0xE9, 509);
	copy = sn_dup_exact(b, 3 + 511);
	cr_assert_eq(term_get_atom(copy, &idx, out), 0);
	cr_assert_eq(idx, 3 + 511);
	cr_assert_eq(strlen(out), 1020);
	cr_assert_eq(memcmp(out, "aa\xC3\xA9", 4), 0);
	free(copy);
	free(out);
}

Test(term, pid_copy_copies_the_name_not_the_buffer)
{
	static const size_t lens[] = {0, 1, 15, 255, sizeof(((erlang_pid *)0)->node) - 1};
	for (size_t k = 0; k < SN_ARRAY_LEN(lens); k++) {
		erlang_pid src, dst;
		memset(&src, 0, sizeof src);
		memset(src.node, 'n', lens[k]);
		src.num = 0x11223344;
		src.serial = 0x55667788;
		src.creation = 0x99aabbcc;
		memset(&dst, 0xA5, sizeof dst);
		term_pid_copy(&dst, &src);
		cr_assert_eq(strlen(dst.node), lens[k]);
		cr_assert_eq(memcmp(dst.node, src.node, lens[k] + 1), 0);
		cr_assert(term_pid_equal(&dst, &src));
		cr_assert_eq(dst.num, src.num);
		cr_assert_eq(dst.serial, src.serial);
		cr_assert_eq(dst.creation, src.creation);
		if (lens[k] + 2 <= sizeof dst.node)
			cr_assert_eq((unsigned char)dst.node[lens[k] + 1], 0xA5, "nothing past the NUL is written");
	}
}

/* ---- term_get_pid against ei_decode_pid ---- */

/* Decodes the pid at the start of bytes[0..len) (an exact-size copy) with
 * both decoders and checks they agree on success, fields and end. */
static void check_pid_as_ei(const char *what, const void *bytes, size_t len)
{
	char *b = sn_dup_exact(bytes, len);
	erlang_pid want, got;
	memset(&want, 0, sizeof want);
	memset(&got, 0x5A, sizeof got);
	int ei_idx = 0;
	size_t idx = 0;
	cr_assert_eq(ei_decode_pid(b, &ei_idx, &want), 0, "%s: ei refused it", what);
	cr_assert_eq(term_get_pid(b, &idx, &got), 0, "%s: refused", what);
	cr_assert_eq(idx, (size_t)ei_idx, "%s: ended at %zu, ei at %d", what, idx, ei_idx);
	cr_assert_str_eq(got.node, want.node, "%s", what);
	cr_assert_eq(got.num, want.num, "%s", what);
	cr_assert_eq(got.serial, want.serial, "%s", what);
	cr_assert_eq(got.creation, want.creation, "%s", what);
	free(b);
}

Test(term, get_pid_as_ei)
{
	ei_x_buff x;
	sn_x_new(&x);
	erlang_pid p = sn_pid("peer@127.0.0.1", 0x12345, 0x7fff);
	p.creation = 0xFEDCBA98u;
	cr_assert_eq(ei_x_encode_pid(&x, &p), 0);
	check_pid_as_ei("NEW_PID_EXT", x.buff, (size_t)x.index);
	ei_x_free(&x);

	/* PID_EXT: creation is the low 2 bits of its one byte. */
	static const uint8_t old_pid[] = {103, 100, 0, 3, 'a', '@', 'b', 0, 0, 0, 1, 0, 0, 0, 2, 0xFF};
	check_pid_as_ei("PID_EXT", old_pid, sizeof old_pid);

	/* A Latin-1 node name is converted to UTF-8; a UTF-8 one is copied. */
	static const uint8_t latin1[] = {88, 115, 3, 'n', 0xE9, 'h', 0, 0, 0, 9, 0, 0, 0, 8, 0, 0, 0, 7};
	check_pid_as_ei("latin1 node", latin1, sizeof latin1);
	static const uint8_t utf8[] = {88, 119, 4, 'n', 0xC3, 0xA9, 'h', 0, 0, 0, 9, 0, 0, 0, 8, 0, 0, 0, 7};
	check_pid_as_ei("utf8 node", utf8, sizeof utf8);
	static const uint8_t empty[] = {88, 118, 0, 0, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3};
	check_pid_as_ei("empty node, ATOM_UTF8_EXT", empty, sizeof empty);
}

Test(term, get_pid_refuses_what_is_no_pid)
{
	erlang_pid out;
	size_t idx = 0;
	static const uint8_t atom[] = {119, 1, 'a'};
	cr_assert_eq(term_get_pid((const char *)atom, &idx, &out), -EPROTO);
	cr_assert_eq(idx, 0);
	/* A pid whose node is not an atom. */
	static const uint8_t bad_node[] = {88, 97, 1, 0, 0, 0, 9, 0, 0, 0, 8, 0, 0, 0, 7};
	cr_assert_eq(term_get_pid((const char *)bad_node, &idx, &out), -EPROTO);
	cr_assert_eq(idx, 0);
}

Test(term, get_pid_refuses_a_node_name_too_long_for_the_buffer)
{
	/* 1020 Latin-1 bytes of 0xE9 pass the validator but are 2040 bytes as
	 * UTF-8: more than erlang_pid.node holds. */
	uint8_t b[1 + 3 + 1020 + 12];
	memset(b, 0, sizeof b);
	b[0] = ERL_NEW_PID_EXT;
	b[1] = ERL_ATOM_EXT;
	sn_put16(b + 2, 1020);
	memset(b + 4, 0xE9, 1020);
	char *copy = sn_dup_exact(b, sizeof b);
	size_t idx = 0;
	cr_assert_eq(term_validate(copy, sizeof b, &idx), -EPROTO, "over 255 characters");
	erlang_pid out;
	idx = 0;
	cr_assert_eq(term_get_pid(copy, &idx, &out), -EPROTO);
	cr_assert_eq(idx, 0);
	free(copy);
}

Test(term, get_pid_node_name_at_the_buffer_bound)
{
	/* 1020 bytes of UTF-8 fill erlang_pid.node with its NUL: accepted, as
	 * ei does. 1021 would put the NUL past it: refused (ei writes it
	 * there). Each 0xE9 becomes two bytes; 'a' stays one. */
	for (size_t utf8_len = 1020; utf8_len <= 1021; utf8_len++) {
		size_t latin1_len = utf8_len / 2 + utf8_len % 2;
		uint8_t b[1 + 3 + 520 + 12];
		memset(b, 0, sizeof b);
		b[0] = ERL_NEW_PID_EXT;
		b[1] = ERL_ATOM_EXT;
		sn_put16(b + 2, (uint16_t)latin1_len);
		memset(b + 4, 0xE9, latin1_len);
		if (utf8_len % 2)
			b[4 + latin1_len - 1] = 'a';
		size_t len = 1 + 3 + latin1_len + 12;
		char *copy = sn_dup_exact(b, len);
		size_t idx = 0;
		cr_assert_eq(term_validate(copy, len, &idx), -EPROTO, "over 255 characters: read without it");
		erlang_pid out;
		idx = 0;
		if (utf8_len == 1020) {
			cr_assert_eq(term_get_pid(copy, &idx, &out), 0);
			cr_assert_eq(idx, len);
			cr_assert_eq(strlen(out.node), 1020);
		} else {
			cr_assert_eq(term_get_pid(copy, &idx, &out), -EPROTO);
			cr_assert_eq(idx, 0);
		}
		free(copy);
	}
}

Test(term, skip_leaves_and_compounds)
{
	/* term_skip reads a leaf's length from its header and walks anything
	 * else: both must end where the validator does. */
	ei_x_buff x;
	sn_x_new(&x);
	cr_assert_eq(ei_x_encode_long(&x, 7), 0);
	cr_assert_eq(ei_x_encode_long(&x, 1 << 20), 0);
	cr_assert_eq(ei_x_encode_atom(&x, "incr"), 0);
	/* ei writes every atom as UTF-8: the Latin-1 tags and the pids by hand. */
	static const char latin1_atoms[] = {ERL_ATOM_EXT, 0, 4, 'c', 'a', 'f', (char)0xE9,
					    ERL_SMALL_ATOM_EXT, 2, 'o', 'k'};
	cr_assert_eq(ei_x_append_buf(&x, latin1_atoms, sizeof latin1_atoms), 0);
	static const char pids[] = {ERL_PID_EXT, ERL_SMALL_ATOM_EXT, 3, 'a', '@', 'b', 0, 0, 0, 1, 0, 0, 0, 2, 3,
				    ERL_NEW_PID_EXT, ERL_ATOM_EXT, 0, 3, 'a', '@', 'b', 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3};
	cr_assert_eq(ei_x_append_buf(&x, pids, sizeof pids), 0);
	cr_assert_eq(ei_x_encode_empty_list(&x), 0);
	cr_assert_eq(ei_x_encode_binary(&x, "abc", 3), 0);
	cr_assert_eq(ei_x_encode_tuple_header(&x, 2), 0);
	cr_assert_eq(ei_x_encode_atom(&x, "a"), 0);
	cr_assert_eq(ei_x_encode_long(&x, 1), 0);
	cr_assert_eq(ei_x_encode_longlong(&x, 1LL << 40), 0);
	static const char big_atom_head[] = {ERL_ATOM_UTF8_EXT, 0, (char)255};
	cr_assert_eq(ei_x_append_buf(&x, big_atom_head, 3), 0);
	char text[255];
	memset(text, 'z', sizeof text);
	cr_assert_eq(ei_x_append_buf(&x, text, sizeof text), 0);
	size_t len = (size_t)x.index, walked = 0, skipped = 0;
	int terms = 0;
	while (walked < len) {
		cr_assert_eq(term_validate(x.buff, len, &walked), 0);
		term_skip(x.buff, &skipped);
		cr_assert_eq(skipped, walked, "term %d: skip ended at %zu, validate at %zu", terms, skipped, walked);
		terms++;
	}
	cr_assert_eq(terms, 12);
	ei_x_free(&x);
}

Test(term, is_atom_in_place_and_by_the_general_path_agree)
{
	/* SMALL_ATOM_UTF8_EXT of the name's length is compared in place; every
	 * other case goes to term_atom_equals. Both must give its answers. */
	static const struct {
		uint8_t bytes[12];
		const char *name;
		bool equal;
	} cases[] = {
		{{119, 4, 'i', 'n', 'c', 'r'}, "incr", true},
		{{119, 4, 'i', 'n', 'c', 'x'}, "incr", false},
		{{119, 3, 'i', 'n', 'c'}, "incr", false},
		{{119, 5, 'i', 'n', 'c', 'r', 's'}, "incr", false},
		{{119, 6, 'i', 'n', 'c', 'r', 0, 'x'}, "incr", true}, /* text stops at its NUL */
		{{119, 2, 'o', 0}, "ok", false}, /* the name's length, cut short by a NUL */
		{{119, 0}, "", true},
		{{115, 4, 'i', 'n', 'c', 'r'}, "incr", true},
		{{118, 0, 4, 'i', 'n', 'c', 'r'}, "incr", true},
		{{100, 0, 4, 'i', 'n', 'c', 'r'}, "incr", true},
		{{97, 4}, "incr", false},
	};
	for (size_t k = 0; k < SN_ARRAY_LEN(cases); k++) {
		const char *b = (const char *)cases[k].bytes;
		size_t name_len = strlen(cases[k].name);
		cr_assert_eq(term_is_atom(b, 0, cases[k].name), cases[k].equal, "case %zu", k);
		cr_assert_eq(term_atom_equals(b, sizeof cases[k].bytes, 0, cases[k].name, name_len), cases[k].equal,
			     "case %zu", k);
	}
}

Test(term, a_reply_whose_encoders_failed_becomes_error_enomem)
{
	ei_x_buff x;
	cr_assert_eq(ei_x_new(&x), 0);
	cr_assert_eq(ei_x_encode_atom(&x, "before"), 0);
	int start = x.index;
	/* Kept as it is when every encoder succeeded. */
	cr_assert_eq(ei_x_encode_tuple_header(&x, 2), 0);
	int rc = ei_x_encode_atom(&x, "ok") | ei_x_encode_long(&x, 5);
	cr_assert_eq(term_x_whole_or_enomem(&x, start, rc), 0);
	int whole = x.index;
	/* Cut back to `start` and made {error, enomem} when one failed. */
	cr_assert_eq(term_x_whole_or_enomem(&x, start, -1), 0);
	cr_assert_neq(x.index, whole);
	int i = start, arity;
	char atom[MAXATOMLEN_UTF8];
	cr_assert_eq(ei_decode_tuple_header(x.buff, &i, &arity), 0);
	cr_assert_eq(arity, 2);
	cr_assert_eq(ei_decode_atom(x.buff, &i, atom), 0);
	cr_assert_str_eq(atom, "error");
	cr_assert_eq(ei_decode_atom(x.buff, &i, atom), 0);
	cr_assert_str_eq(atom, "enomem");
	cr_assert_eq(i, x.index);
	ei_x_free(&x);
}
