/*
 * test_entity_id.c — the canonical encoding of entity ids.
 *
 * Terms are written by hand as raw external-format bytes, so that one term
 * can be given in every encoding a peer might use. Every input goes through
 * term_validate() first, as on the node; every canonical output is checked
 * to be a valid term that canonicalises to itself; every input is also cut
 * at every byte and must then be refused, not crash. Inputs live in
 * exact-size heap blocks so an over-read is an AddressSanitizer report.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <ei.h>

#include "etf/entity_id.h"
#include "etf/term.h"
#include "etf/term_validate.h"
#include "unit_helpers.h"

/* ---- building terms ---- */

/* Appends bytes. ei_x_buff grows by 100 bytes at a time, which makes
 * building megabyte terms byte by byte quadratic under AddressSanitizer, so
 * the buffer is doubled here first. */
static void xb(ei_x_buff *x, const void *p, size_t n)
{
	if ((size_t)x->index + n + 256 > (size_t)x->buffsz) {
		size_t cap = 2 * ((size_t)x->index + n + 256);
		char *q = realloc(x->buff, cap);
		cr_assert_not_null(q);
		x->buff = q;
		x->buffsz = (int)cap;
	}
	cr_assert_eq(ei_x_append_buf(x, p, (int)n), 0);
}

static void xb1(ei_x_buff *x, uint8_t b) { xb(x, &b, 1); }

static void xb32(ei_x_buff *x, uint32_t v)
{
	uint8_t b[4];
	sn_put32(b, v);
	xb(x, b, 4);
}

/* SMALL_ATOM_UTF8_EXT of a short ASCII name. */
static void xatom(ei_x_buff *x, const char *name)
{
	xb1(x, ERL_SMALL_ATOM_UTF8_EXT);
	xb1(x, (uint8_t)strlen(name));
	xb(x, name, strlen(name));
}

/* ---- running the canonicaliser ---- */

/* What the node does: validate the whole input, then canonicalise it. */
static int validated_canon(const void *term, size_t len, ei_x_buff *out)
{
	char *b = sn_dup_exact(term, len);
	size_t idx = 0;
	int rc = term_validate(b, len, &idx);
	if (rc == 0 && idx != len)
		rc = -EPROTO;
	if (rc == 0)
		rc = entity_id_canonical(b, len, out);
	free(b);
	return rc;
}

/* Every strict prefix is refused: by the validator, and (robustness beyond
 * the contract) by entity_id_canonical itself, with out->index untouched. */
static void check_truncations(const char *what, const void *term, size_t len)
{
	ei_x_buff x;
	sn_x_new(&x);
	xb(&x, "pre", 3);
	for (size_t k = 0; k < len; k++) {
		int rc = validated_canon(term, k, &x);
		cr_assert_eq(rc, -EPROTO, "%s: validated prefix %zu/%zu gave %d", what, k, len, rc);
		cr_assert_eq(x.index, 3, "%s: prefix %zu moved index", what, k);

		char *p = sn_dup_exact(term, k);
		rc = entity_id_canonical(p, k, &x);
		free(p);
		cr_assert(rc == -EPROTO || rc == -EINVAL, "%s: raw prefix %zu/%zu gave %d", what, k, len, rc);
		cr_assert_eq(x.index, 3, "%s: raw prefix %zu moved index", what, k);
	}
	ei_x_free(&x);
}

/* Canonicalises a valid entity id; checks truncations and the output's
 * round trip; returns the canonical bytes (caller frees) in *n. */
static char *canon(const char *what, const void *term, size_t len, size_t *n)
{
	ei_x_buff x;
	sn_x_new(&x);
	xb(&x, "pre", 3); /* output is appended, not written at offset 0 */
	int rc = validated_canon(term, len, &x);
	cr_assert_eq(rc, 0, "%s: refused (%d)", what, rc);
	cr_assert_eq(memcmp(x.buff, "pre", 3), 0, "%s: clobbered earlier output", what);
	size_t m = (size_t)x.index - 3;
	char *res = sn_dup_exact(x.buff + 3, m);
	ei_x_free(&x);

	/* The output is a term, and it is already canonical. */
	size_t idx = 0;
	cr_assert_eq(term_validate(res, m, &idx), 0, "%s: output not a valid term", what);
	cr_assert_eq(idx, m, "%s: output has trailing bytes", what);
	sn_x_new(&x);
	cr_assert_eq(entity_id_canonical(res, m, &x), 0, "%s: output refused", what);
	cr_assert_eq((size_t)x.index, m, "%s: not idempotent (size %d vs %zu)", what, x.index, m);
	cr_assert_eq(memcmp(x.buff, res, m), 0, "%s: not idempotent", what);
	ei_x_free(&x);

	if (len < 4096)
		check_truncations(what, term, len);
	*n = m;
	return res;
}

static void expect_canon(const char *what, const void *term, size_t len, const void *want, size_t wn)
{
	size_t n;
	char *got = canon(what, term, len, &n);
	cr_assert_eq(n, wn, "%s: %zu canonical bytes, expected %zu", what, n, wn);
	cr_assert_eq(memcmp(got, want, n), 0, "%s: canonical bytes differ from expected", what);
	free(got);
}

static void expect_canon_x(const char *what, ei_x_buff *in, const void *want, size_t wn)
{
	expect_canon(what, in->buff, (size_t)in->index, want, wn);
}

static void expect_differ(const char *what, const void *a, size_t an, const void *b, size_t bn)
{
	size_t n1, n2;
	char *c1 = canon(what, a, an, &n1);
	char *c2 = canon(what, b, bn, &n2);
	cr_assert(n1 != n2 || memcmp(c1, c2, n1) != 0, "%s: distinct terms share bytes", what);
	free(c1);
	free(c2);
}

static void expect_rc(const char *what, const void *term, size_t len, int want)
{
	ei_x_buff x;
	sn_x_new(&x);
	xb(&x, "pre", 3);
	int rc = validated_canon(term, len, &x);
	cr_assert_eq(rc, want, "%s: rc %d, expected %d", what, rc, want);
	cr_assert_eq(x.index, 3, "%s: index not restored", what);
	ei_x_free(&x);
	if (len < 4096)
		check_truncations(what, term, len);
}

#define CANON(what, in, want) expect_canon(what, in, sizeof in, want, sizeof want)
#define DIFFER(what, a, b) expect_differ(what, a, sizeof a, b, sizeof b)
#define RC(what, in, rc) expect_rc(what, in, sizeof in, rc)

/* ---- integers ---- */

Test(entity_id, integer_five_in_every_encoding)
{
	static const uint8_t want[] = {97, 5};
	static const uint8_t small[] = {97, 5};
	static const uint8_t int32[] = {98, 0, 0, 0, 5};
	static const uint8_t big1[] = {110, 1, 0, 5};
	static const uint8_t big_padded[] = {110, 3, 0, 5, 0, 0};
	static const uint8_t large_big[] = {111, 0, 0, 0, 2, 0, 5, 0};
	CANON("SMALL_INTEGER_EXT 5", small, want);
	CANON("INTEGER_EXT 5", int32, want);
	CANON("SMALL_BIG_EXT 5", big1, want);
	CANON("padded SMALL_BIG_EXT 5", big_padded, want);
	CANON("LARGE_BIG_EXT 5", large_big, want);
}

Test(entity_id, integers_at_the_boundaries)
{
	static const uint8_t w256[] = {98, 0, 0, 1, 0};
	static const uint8_t big256[] = {110, 2, 0, 0, 1};
	CANON("256 as bignum", big256, w256);

	static const uint8_t wm1[] = {98, 0xff, 0xff, 0xff, 0xff};
	static const uint8_t bigm1[] = {110, 4, 1, 1, 0, 0, 0};
	CANON("-1 as bignum", bigm1, wm1);

	/* -2^31 fits INTEGER_EXT; 2^31 and -2^31-1 do not. */
	static const uint8_t wmin[] = {98, 0x80, 0, 0, 0};
	static const uint8_t bigmin[] = {110, 5, 1, 0, 0, 0, 0x80, 0};
	CANON("-2^31 as bignum", bigmin, wmin);
	static const uint8_t w2_31[] = {110, 4, 0, 0, 0, 0, 0x80};
	static const uint8_t big2_31[] = {111, 0, 0, 0, 6, 0, 0, 0, 0, 0x80, 0, 0};
	CANON("2^31", w2_31, w2_31);
	CANON("2^31 padded LARGE_BIG_EXT", big2_31, w2_31);
	static const uint8_t wmin1[] = {110, 4, 1, 1, 0, 0, 0x80};
	static const uint8_t bigmin1[] = {110, 8, 1, 1, 0, 0, 0x80, 0, 0, 0, 0};
	CANON("-2^31-1 padded", bigmin1, wmin1);

	/* A bignum of magnitude zero is 0, whatever its sign. */
	static const uint8_t zero[] = {97, 0};
	static const uint8_t negzero[] = {110, 2, 1, 0, 0};
	static const uint8_t emptybig[] = {110, 0, 0};
	static const uint8_t int0[] = {98, 0, 0, 0, 0};
	CANON("negative zero bignum", negzero, zero);
	CANON("empty bignum", emptybig, zero);
	CANON("INTEGER_EXT 0", int0, zero);
}

Test(entity_id, integers_from_ei_agree_with_bignum_forms)
{
	const long long values[] = {0, 255, 256, -1, 2147483647LL, -2147483648LL, 1LL << 40,
	                            -(1LL << 40), INT64_MAX, INT64_MIN};
	for (size_t k = 0; k < SN_ARRAY_LEN(values); k++) {
		ei_x_buff a;
		sn_x_new(&a);
		cr_assert_eq(ei_x_encode_longlong(&a, values[k]), 0);
		/* The same value as a padded LARGE_BIG_EXT. */
		unsigned long long mag = values[k] < 0 ? 0ULL - (unsigned long long)values[k]
		                                       : (unsigned long long)values[k];
		ei_x_buff b;
		sn_x_new(&b);
		xb1(&b, ERL_LARGE_BIG_EXT);
		xb32(&b, 12);
		xb1(&b, values[k] < 0);
		for (int i = 0; i < 12; i++)
			xb1(&b, i < 8 ? (uint8_t)(mag >> (8 * i)) : 0);
		char what[64];
		snprintf(what, sizeof what, "integer %lld", values[k]);
		size_t n1, n2;
		char *c1 = canon(what, a.buff, (size_t)a.index, &n1);
		char *c2 = canon(what, b.buff, (size_t)b.index, &n2);
		cr_assert_eq(n1, n2, "%s: sizes differ", what);
		cr_assert_eq(memcmp(c1, c2, n1), 0, "%s: bytes differ", what);
		/* The form a BEAM would pick (ei itself uses bignums from 2^27). */
		uint8_t tag = values[k] >= 0 && values[k] <= 255 ? ERL_SMALL_INTEGER_EXT
		              : values[k] >= INT32_MIN && values[k] <= INT32_MAX ? ERL_INTEGER_EXT
		                                                                : ERL_SMALL_BIG_EXT;
		cr_assert_eq((uint8_t)c1[0], tag, "%s: tag %d", what, c1[0]);
		free(c1);
		free(c2);
		ei_x_free(&a);
		ei_x_free(&b);
	}
}

Test(entity_id, big_bignums_keep_their_form)
{
	/* 300 digit bytes: LARGE_BIG_EXT; with 40 zero bytes on top, the same. */
	ei_x_buff want, in, small;
	sn_x_new(&want);
	sn_x_new(&in);
	xb1(&want, ERL_LARGE_BIG_EXT);
	xb32(&want, 300);
	xb1(&want, 1);
	xb1(&in, ERL_LARGE_BIG_EXT);
	xb32(&in, 340);
	xb1(&in, 1);
	for (int i = 0; i < 340; i++) {
		uint8_t d = i < 300 ? (uint8_t)(i * 7 + 1) : 0;
		if (i < 300)
			xb1(&want, d);
		xb1(&in, d);
	}
	expect_canon_x("padded LARGE_BIG_EXT", &in, want.buff, (size_t)want.index);
	expect_canon_x("LARGE_BIG_EXT", &want, want.buff, (size_t)want.index);

	/* A LARGE_BIG_EXT of 255 bytes or fewer becomes SMALL_BIG_EXT. */
	sn_x_new(&small);
	xb1(&small, ERL_LARGE_BIG_EXT);
	xb32(&small, 9);
	xb1(&small, 0);
	static const uint8_t digits[] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
	xb(&small, digits, 9);
	static const uint8_t wsmall[] = {110, 9, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
	expect_canon_x("short LARGE_BIG_EXT", &small, wsmall, sizeof wsmall);
	ei_x_free(&want);
	ei_x_free(&in);
	ei_x_free(&small);
}

/* ---- floats ---- */

static void text_float(uint8_t out[32], const char *text)
{
	memset(out, 0, 32);
	out[0] = ERL_FLOAT_EXT;
	memcpy(out + 1, text, strlen(text));
}

Test(entity_id, floats_text_and_binary)
{
	static const uint8_t want[] = {70, 0x3f, 0xf8, 0, 0, 0, 0, 0, 0}; /* 1.5 */
	uint8_t t1[32], t2[32], t3[32], t4[32];
	char text[40];
	snprintf(text, sizeof text, "%.20e", 1.5);
	text_float(t1, text);
	text_float(t2, "1,5");
	text_float(t3, "15.0e-1");
	text_float(t4, "+0.15E+01");
	CANON("NEW_FLOAT_EXT 1.5", want, want);
	CANON("FLOAT_EXT %.20e", t1, want);
	CANON("FLOAT_EXT comma", t2, want);
	CANON("FLOAT_EXT 15.0e-1", t3, want);
	CANON("FLOAT_EXT +0.15E+01", t4, want);

	/* A text float that fills all 31 bytes with nothing after it: the BEAM
	 * reads on past the field for the NUL that ends the text, past the
	 * term here. Refused. */
	uint8_t full[32];
	full[0] = ERL_FLOAT_EXT;
	memcpy(full + 1, "1.50000000000000000000000000000", 31);
	ei_x_buff out;
	sn_x_new(&out);
	char *copy = sn_dup_exact(full, sizeof full);
	cr_assert_eq(entity_id_canonical(copy, sizeof full, &out), -EPROTO);
	free(copy);
	ei_x_free(&out);

	/* Values that need every bit: 0.1, a subnormal, the largest double. */
	const double vals[] = {0.1, -2.5e-310, 1.7976931348623157e308, -123456.789};
	for (size_t k = 0; k < SN_ARRAY_LEN(vals); k++) {
		ei_x_buff x;
		sn_x_new(&x);
		cr_assert_eq(ei_x_encode_double(&x, vals[k]), 0);
		uint8_t t[32];
		snprintf(text, sizeof text, "%.20e", vals[k]);
		text_float(t, text);
		expect_canon("text float round trip", t, sizeof t, x.buff, (size_t)x.index);
		ei_x_free(&x);
	}
}

Test(entity_id, signed_zero_keeps_its_sign)
{
	static const uint8_t pz[] = {70, 0, 0, 0, 0, 0, 0, 0, 0};
	static const uint8_t nz[] = {70, 0x80, 0, 0, 0, 0, 0, 0, 0};
	uint8_t tnz[32];
	text_float(tnz, "-0.00000000000000000000e+00");
	CANON("-0.0 text", tnz, nz);
	DIFFER("0.0 vs -0.0", pz, nz);
}

Test(entity_id, non_finite_and_bad_text_floats)
{
	static const uint8_t inf[] = {70, 0x7f, 0xf0, 0, 0, 0, 0, 0, 0};
	static const uint8_t ninf[] = {70, 0xff, 0xf0, 0, 0, 0, 0, 0, 0};
	static const uint8_t nan[] = {70, 0x7f, 0xf8, 0, 0, 0, 0, 0, 1};
	RC("inf", inf, -EPROTO);
	RC("-inf", ninf, -EPROTO);
	RC("nan", nan, -EPROTO);
	const char *bad[] = {"inf", "nan", "1e5", "1.", ".5", "0x1p3", "1.5 ", "1.5e", "--1.0", "1.0e+999"};
	for (size_t k = 0; k < SN_ARRAY_LEN(bad); k++) {
		uint8_t t[32];
		text_float(t, bad[k]);
		RC(bad[k], t, -EPROTO);
	}
}

/* ---- atoms ---- */

Test(entity_id, atom_foo_in_every_encoding)
{
	static const uint8_t want[] = {119, 3, 'f', 'o', 'o'};
	static const uint8_t a1[] = {100, 0, 3, 'f', 'o', 'o'};
	static const uint8_t a2[] = {115, 3, 'f', 'o', 'o'};
	static const uint8_t a3[] = {118, 0, 3, 'f', 'o', 'o'};
	CANON("ATOM_EXT", a1, want);
	CANON("SMALL_ATOM_EXT", a2, want);
	CANON("ATOM_UTF8_EXT", a3, want);
	CANON("SMALL_ATOM_UTF8_EXT", want, want);
}

Test(entity_id, latin1_atoms_become_utf8)
{
	static const uint8_t want[] = {119, 5, 'c', 'a', 'f', 0xC3, 0xA9};
	static const uint8_t l1[] = {100, 0, 4, 'c', 'a', 'f', 0xE9};
	static const uint8_t l2[] = {115, 4, 'c', 'a', 'f', 0xE9};
	static const uint8_t u1[] = {118, 0, 5, 'c', 'a', 'f', 0xC3, 0xA9};
	CANON("latin1 ATOM_EXT", l1, want);
	CANON("latin1 SMALL_ATOM_EXT", l2, want);
	CANON("utf8 ATOM_UTF8_EXT", u1, want);

	/* 255 latin-1 characters above 127: 510 UTF-8 bytes, the long form. */
	uint8_t in[3 + 255], out[3 + 510];
	in[0] = ERL_ATOM_EXT;
	sn_put16(in + 1, 255);
	out[0] = ERL_ATOM_UTF8_EXT;
	sn_put16(out + 1, 510);
	for (size_t k = 0; k < 255; k++) {
		in[3 + k] = 0xFF;
		out[3 + 2 * k] = 0xC3;
		out[4 + 2 * k] = 0xBF;
	}
	CANON("255 x y-umlaut", in, out);

	static const uint8_t empty[] = {119, 0};
	static const uint8_t empty_latin1[] = {100, 0, 0};
	CANON("empty atom", empty_latin1, empty);
}

Test(entity_id, bad_atom_text_refused)
{
	static const uint8_t overlong[] = {119, 2, 0xC1, 0x81};
	static const uint8_t surrogate[] = {119, 3, 0xED, 0xA0, 0x80};
	static const uint8_t too_high[] = {119, 4, 0xF4, 0x90, 0x80, 0x80};
	static const uint8_t cut[] = {119, 2, 'a', 0xC3};
	static const uint8_t lone_cont[] = {119, 1, 0x80};
	static const uint8_t overlong3[] = {119, 3, 0xE0, 0x80, 0xAF};
	RC("overlong", overlong, -EPROTO);
	RC("surrogate", surrogate, -EPROTO);
	RC("above U+10FFFF", too_high, -EPROTO);
	RC("cut sequence", cut, -EPROTO);
	RC("lone continuation", lone_cont, -EPROTO);
	RC("overlong 3-byte", overlong3, -EPROTO);

	/* 256 characters is one too many, in either encoding. */
	uint8_t l[3 + 256], u[3 + 256];
	l[0] = ERL_ATOM_EXT;
	u[0] = ERL_ATOM_UTF8_EXT;
	sn_put16(l + 1, 256);
	sn_put16(u + 1, 256);
	memset(l + 3, 'a', 256);
	memset(u + 3, 'a', 256);
	RC("256-char latin1 atom", l, -EPROTO);
	RC("256-char utf8 atom", u, -EPROTO);
}

/* ---- lists and strings ---- */

Test(entity_id, string_abc_in_every_encoding)
{
	static const uint8_t want[] = {107, 0, 3, 'a', 'b', 'c'};
	static const uint8_t l1[] = {108, 0, 0, 0, 3, 97, 'a', 97, 'b', 97, 'c', 106};
	static const uint8_t l2[] = {108, 0, 0, 0, 3, 98, 0, 0, 0, 'a', 110, 1, 0, 'b', 97, 'c', 106};
	static const uint8_t chain[] = {108, 0, 0, 0, 1, 97, 'a', 107, 0, 2, 'b', 'c'};
	static const uint8_t chain2[] = {108, 0, 0, 0, 1, 97, 'a', 108, 0, 0, 0, 2, 97, 'b', 97, 'c', 106};
	static const uint8_t chain3[] = {108, 0, 0, 0, 0, 108, 0, 0, 0, 1, 97, 'a',
	                                 108, 0, 0, 0, 0, 107, 0, 2, 'b', 'c'};
	static const uint8_t empty_seg[] = {108, 0, 0, 0, 0, 107, 0, 3, 'a', 'b', 'c'};
	CANON("STRING_EXT", want, want);
	CANON("LIST_EXT of small ints", l1, want);
	CANON("LIST_EXT of mixed integer forms", l2, want);
	CANON("[$a | \"bc\"]", chain, want);
	CANON("[$a | [$b, $c]]", chain2, want);
	CANON("empty segments", chain3, want);
	CANON("LIST_EXT 0 with string tail", empty_seg, want);
}

Test(entity_id, empty_list_in_every_encoding)
{
	static const uint8_t want[] = {106};
	static const uint8_t s0[] = {107, 0, 0};
	static const uint8_t l0[] = {108, 0, 0, 0, 0, 106};
	static const uint8_t l00[] = {108, 0, 0, 0, 0, 108, 0, 0, 0, 0, 107, 0, 0};
	CANON("NIL_EXT", want, want);
	CANON("empty STRING_EXT", s0, want);
	CANON("empty LIST_EXT", l0, want);
	CANON("empty LIST_EXT chain", l00, want);
}

Test(entity_id, improper_and_mixed_lists)
{
	/* [1 | 2] stays LIST_EXT, however the tail chain is cut. */
	static const uint8_t want[] = {108, 0, 0, 0, 1, 97, 1, 97, 2};
	static const uint8_t alt[] = {108, 0, 0, 0, 0, 108, 0, 0, 0, 1, 98, 0, 0, 0, 1, 108, 0, 0, 0, 0, 97, 2};
	CANON("[1 | 2]", want, want);
	CANON("[1 | 2] chained", alt, want);

	/* [1, 2 | "" ] is proper: "12" as a string. */
	static const uint8_t wstr[] = {107, 0, 2, 1, 2};
	static const uint8_t nilstr[] = {108, 0, 0, 0, 2, 97, 1, 97, 2, 107, 0, 0};
	CANON("string tail of length 0", nilstr, wstr);

	/* An empty LIST_EXT is its tail: LIST_EXT(0, 5) is 5. */
	static const uint8_t five[] = {97, 5};
	static const uint8_t l0five[] = {108, 0, 0, 0, 0, 97, 5};
	CANON("LIST_EXT 0 with tail 5", l0five, five);
	static const uint8_t in_list[] = {108, 0, 0, 0, 1, 108, 0, 0, 0, 0, 97, 5, 106};
	static const uint8_t w_in_list[] = {107, 0, 1, 5};
	CANON("[LIST_EXT(0, 5)]", in_list, w_in_list);

	/* [1 | {}] and [a, 1]: not strings. */
	static const uint8_t tup_tail[] = {108, 0, 0, 0, 1, 97, 1, 104, 0};
	CANON("[1 | {}]", tup_tail, tup_tail);
	static const uint8_t mixed[] = {108, 0, 0, 0, 2, 119, 1, 'a', 97, 1, 106};
	CANON("[a, 1]", mixed, mixed);
	static const uint8_t big_elem[] = {108, 0, 0, 0, 2, 97, 1, 98, 0, 0, 1, 0, 106};
	CANON("[1, 256]", big_elem, big_elem);
	/* [[1]]: the inner list is a string, the outer is not. */
	static const uint8_t nested[] = {108, 0, 0, 0, 1, 108, 0, 0, 0, 1, 97, 1, 106, 106};
	static const uint8_t wnested[] = {108, 0, 0, 0, 1, 107, 0, 1, 1, 106};
	CANON("[[1]]", nested, wnested);
	/* A list whose last element is a string: ["ab"], not "ab". */
	static const uint8_t lstr[] = {108, 0, 0, 0, 1, 107, 0, 2, 'a', 'b', 106};
	CANON("[\"ab\"]", lstr, lstr);
	DIFFER("[\"ab\"] vs \"ab\"", lstr, ((const uint8_t[]){107, 0, 2, 'a', 'b'}));
}

Test(entity_id, string_length_limit)
{
	/* 65535 small ints: STRING_EXT. 65536: LIST_EXT, as a BEAM writes them. */
	for (uint32_t n = 65535; n <= 65536; n++) {
		ei_x_buff in, want;
		sn_x_new(&in);
		sn_x_new(&want);
		xb1(&in, ERL_LIST_EXT);
		xb32(&in, n);
		if (n <= 65535) {
			xb1(&want, ERL_STRING_EXT);
			xb1(&want, (uint8_t)(n >> 8));
			xb1(&want, (uint8_t)n);
		} else {
			xb1(&want, ERL_LIST_EXT);
			xb32(&want, n);
		}
		for (uint32_t k = 0; k < n; k++) {
			uint8_t e[2] = {97, (uint8_t)(k * 31)};
			xb(&in, e, 2);
			xb(&want, n <= 65535 ? e + 1 : e, n <= 65535 ? 1 : 2);
		}
		xb1(&in, ERL_NIL_EXT);
		if (n > 65535)
			xb1(&want, ERL_NIL_EXT);
		expect_canon_x("long byte list", &in, want.buff, (size_t)want.index);
		ei_x_free(&in);
		ei_x_free(&want);
	}

	/* Two string segments joined: 40000 + 40000 bytes, over the limit. */
	ei_x_buff in, want;
	sn_x_new(&in);
	sn_x_new(&want);
	xb1(&in, ERL_LIST_EXT);
	xb32(&in, 1);
	xb1(&in, ERL_STRING_EXT);
	xb1(&in, 40000 >> 8);
	xb1(&in, 40000 & 0xff);
	for (int k = 0; k < 40000; k++)
		xb1(&in, 'x');
	xb1(&in, ERL_STRING_EXT);
	xb1(&in, 40000 >> 8);
	xb1(&in, 40000 & 0xff);
	for (int k = 0; k < 40000; k++)
		xb1(&in, 'y');
	/* That was ["xxx..." | "yyy..."]: one element, then the tail. */
	xb1(&want, ERL_LIST_EXT);
	xb32(&want, 40001);
	xb1(&want, ERL_STRING_EXT);
	xb1(&want, 40000 >> 8);
	xb1(&want, 40000 & 0xff);
	for (int k = 0; k < 40000; k++)
		xb1(&want, 'x');
	for (int k = 0; k < 40000; k++) {
		xb1(&want, 97);
		xb1(&want, 'y');
	}
	xb1(&want, ERL_NIL_EXT);
	expect_canon_x("string element with long string tail", &in, want.buff, (size_t)want.index);
	ei_x_free(&in);
	ei_x_free(&want);
}

/* ---- binaries ---- */

Test(entity_id, binaries_and_bitstrings)
{
	static const uint8_t bin[] = {109, 0, 0, 0, 2, 'h', 'i'};
	static const uint8_t bits8[] = {77, 0, 0, 0, 2, 8, 'h', 'i'};
	CANON("BINARY_EXT", bin, bin);
	CANON("BIT_BINARY_EXT with 8 bits", bits8, bin);

	static const uint8_t want[] = {77, 0, 0, 0, 2, 3, 0xAB, 0xE0};
	static const uint8_t garbage[] = {77, 0, 0, 0, 2, 3, 0xAB, 0xFF};
	static const uint8_t garbage2[] = {77, 0, 0, 0, 2, 3, 0xAB, 0xF5};
	CANON("bitstring", want, want);
	CANON("bitstring with garbage bits", garbage, want);
	CANON("bitstring with other garbage", garbage2, want);

	static const uint8_t one_bit[] = {77, 0, 0, 0, 1, 1, 0xFF};
	static const uint8_t w_one_bit[] = {77, 0, 0, 0, 1, 1, 0x80};
	CANON("<<1:1>>", one_bit, w_one_bit);

	static const uint8_t empty[] = {109, 0, 0, 0, 0};
	CANON("<<>>", empty, empty);
	/* <<>> as a bit string of no bytes and no bits: the BEAM reads it as
	 * the empty binary, alone and as a map's value. */
	static const uint8_t empty_bits[] = {77, 0, 0, 0, 0, 0};
	CANON("<<>> as BIT_BINARY_EXT", empty_bits, empty);
	static const uint8_t map_empty_bits[] = {116, 0, 0, 0, 2, 97, 1, 97, 2, 119, 0, 77, 0, 0, 0, 0, 0};
	static const uint8_t w_map_empty_bits[] = {116, 0, 0, 0, 2, 97, 1, 97, 2, 119, 0, 109, 0, 0, 0, 0};
	CANON("#{1 => 2, '' => <<>> as BIT_BINARY_EXT}", map_empty_bits, w_map_empty_bits);
	/* A bit string of no bytes has no bits either. */
	static const uint8_t empty_three_bits[] = {77, 0, 0, 0, 0, 3};
	expect_rc("bit string of no bytes and 3 bits", empty_three_bits, sizeof empty_three_bits, -EPROTO);
}

/* ---- tuples ---- */

Test(entity_id, tuples)
{
	static const uint8_t want[] = {104, 2, 97, 1, 119, 1, 'a'};
	static const uint8_t large[] = {105, 0, 0, 0, 2, 98, 0, 0, 0, 1, 100, 0, 1, 'a'};
	CANON("LARGE_TUPLE_EXT of 2", large, want);
	static const uint8_t empty[] = {104, 0};
	static const uint8_t lempty[] = {105, 0, 0, 0, 0};
	CANON("{} as LARGE_TUPLE_EXT", lempty, empty);

	/* 300 elements stay LARGE_TUPLE_EXT; elements are canonicalised. */
	ei_x_buff in, w;
	sn_x_new(&in);
	sn_x_new(&w);
	xb1(&in, ERL_LARGE_TUPLE_EXT);
	xb32(&in, 300);
	xb1(&w, ERL_LARGE_TUPLE_EXT);
	xb32(&w, 300);
	for (int k = 0; k < 300; k++) {
		xb1(&in, ERL_SMALL_ATOM_EXT);
		xb1(&in, 1);
		xb1(&in, 'x');
		xatom(&w, "x");
	}
	expect_canon_x("300-tuple", &in, w.buff, (size_t)w.index);
	ei_x_free(&in);
	ei_x_free(&w);
}

/* ---- maps ---- */

Test(entity_id, map_key_order_does_not_matter)
{
	/* #{a => 1, b => 2} */
	static const uint8_t ab[] = {116, 0, 0, 0, 2, 119, 1, 'a', 97, 1, 119, 1, 'b', 97, 2};
	static const uint8_t ba[] = {116, 0, 0, 0, 2, 119, 1, 'b', 97, 2, 119, 1, 'a', 97, 1};
	static const uint8_t ba_latin1[] = {116, 0, 0, 0, 2, 100, 0, 1, 'b', 98, 0, 0, 0, 2,
	                                    115, 1, 'a', 110, 1, 0, 1};
	CANON("#{a,b}", ab, ab);
	CANON("#{b,a}", ba, ab);
	CANON("#{b,a} other encodings", ba_latin1, ab);

	/* Keys compare by canonical bytes: 1 as INTEGER_EXT sorts as 97 1. */
	static const uint8_t num[] = {116, 0, 0, 0, 2, 119, 1, 'z', 106, 98, 0, 0, 0, 1, 106};
	static const uint8_t wnum[] = {116, 0, 0, 0, 2, 97, 1, 106, 119, 1, 'z', 106};
	CANON("key encoding decides order", num, wnum);

	/* A proper prefix sorts first: key "a" before key "ab". */
	static const uint8_t pre[] = {116, 0, 0, 0, 2, 107, 0, 2, 'a', 'b', 97, 1, 107, 0, 1, 'a', 97, 2};
	static const uint8_t wpre[] = {116, 0, 0, 0, 2, 107, 0, 1, 'a', 97, 2, 107, 0, 2, 'a', 'b', 97, 1};
	CANON("prefix key first", pre, wpre);

	static const uint8_t empty[] = {116, 0, 0, 0, 0};
	CANON("#{}", empty, empty);
}

Test(entity_id, nested_maps_sort_everywhere)
{
	/* #{#{b => 1, a => 2} => x, k => #{d => 1, c => 2}} in four layouts. */
	static const uint8_t want[] = {
		116, 0, 0, 0, 2,
		116, 0, 0, 0, 2, 119, 1, 'a', 97, 2, 119, 1, 'b', 97, 1, 119, 1, 'x',
		119, 1, 'k', 116, 0, 0, 0, 2, 119, 1, 'c', 97, 2, 119, 1, 'd', 97, 1,
	};
	/* (The map key, tag 116, sorts before the atom key, tag 119.) */
	static const uint8_t in0[] = {
		116, 0, 0, 0, 2,
		119, 1, 'k', 116, 0, 0, 0, 2, 119, 1, 'd', 97, 1, 119, 1, 'c', 97, 2,
		116, 0, 0, 0, 2, 119, 1, 'b', 97, 1, 119, 1, 'a', 97, 2, 119, 1, 'x',
	};
	static const uint8_t in1[] = {
		116, 0, 0, 0, 2,
		116, 0, 0, 0, 2, 119, 1, 'b', 97, 1, 119, 1, 'a', 97, 2, 119, 1, 'x',
		119, 1, 'k', 116, 0, 0, 0, 2, 119, 1, 'd', 97, 1, 119, 1, 'c', 97, 2,
	};
	static const uint8_t in2[] = {
		116, 0, 0, 0, 2,
		100, 0, 1, 'k', 116, 0, 0, 0, 2, 119, 1, 'c', 97, 2, 119, 1, 'd', 97, 1,
		116, 0, 0, 0, 2, 119, 1, 'a', 98, 0, 0, 0, 2, 119, 1, 'b', 97, 1, 115, 1, 'x',
	};
	CANON("nested maps, every order reversed", in0, want);
	CANON("nested maps, inner orders reversed", in1, want);
	CANON("nested maps, other encodings", in2, want);
	CANON("nested maps, canonical", want, want);

	/* Keys that differ only inside a nested map whose written order
	 * differs from its canonical order. */
	static const uint8_t k2[] = {
		116, 0, 0, 0, 2,
		104, 1, 116, 0, 0, 0, 2, 119, 1, 'b', 97, 2, 119, 1, 'a', 97, 1, 97, 10,
		104, 1, 116, 0, 0, 0, 2, 119, 1, 'b', 97, 1, 119, 1, 'a', 97, 2, 97, 20,
	};
	static const uint8_t wk2[] = {
		116, 0, 0, 0, 2,
		104, 1, 116, 0, 0, 0, 2, 119, 1, 'a', 97, 1, 119, 1, 'b', 97, 2, 97, 10,
		104, 1, 116, 0, 0, 0, 2, 119, 1, 'a', 97, 2, 119, 1, 'b', 97, 1, 97, 20,
	};
	CANON("keys differing inside reordered maps", k2, wk2);
}

Test(entity_id, many_keys_in_any_order)
{
	/* 100 integer keys 0..99 written in three different orders. */
	char *first = NULL;
	size_t first_n = 0;
	for (unsigned order = 0; order < 3; order++) {
		ei_x_buff in;
		sn_x_new(&in);
		xb1(&in, ERL_MAP_EXT);
		xb32(&in, 100);
		for (unsigned k = 0; k < 100; k++) {
			unsigned key = order == 0 ? k : order == 1 ? 99 - k : (k * 37) % 100;
			if (order == 2) { /* as INTEGER_EXT */
				xb1(&in, ERL_INTEGER_EXT);
				xb32(&in, key);
			} else {
				xb1(&in, ERL_SMALL_INTEGER_EXT);
				xb1(&in, (uint8_t)key);
			}
			xb1(&in, ERL_SMALL_TUPLE_EXT);
			xb1(&in, 1);
			xb1(&in, ERL_SMALL_INTEGER_EXT);
			xb1(&in, (uint8_t)key);
		}
		size_t n;
		char *c = canon("100-key map", in.buff, (size_t)in.index, &n);
		if (!first) {
			first = c;
			first_n = n;
		} else {
			cr_assert_eq(n, first_n);
			cr_assert_eq(memcmp(c, first, n), 0, "order %u gives other bytes", order);
			free(c);
		}
		ei_x_free(&in);
	}
	free(first);
}

Test(entity_id, duplicate_keys_refused)
{
	static const uint8_t dup[] = {116, 0, 0, 0, 2, 97, 1, 97, 1, 98, 0, 0, 0, 1, 97, 2};
	static const uint8_t dup_atoms[] = {116, 0, 0, 0, 2, 100, 0, 1, 'a', 106, 119, 1, 'a', 106};
	static const uint8_t dup_lists[] = {116, 0, 0, 0, 2, 107, 0, 1, 'a', 106,
	                                    108, 0, 0, 0, 1, 97, 'a', 106, 106};
	static const uint8_t dup_nested[] = {
		116, 0, 0, 0, 2,
		116, 0, 0, 0, 2, 119, 1, 'b', 97, 1, 119, 1, 'a', 97, 2, 106,
		116, 0, 0, 0, 2, 119, 1, 'a', 97, 2, 119, 1, 'b', 97, 1, 106,
	};
	RC("1 twice", dup, -EPROTO);
	RC("a twice", dup_atoms, -EPROTO);
	RC("\"a\" twice", dup_lists, -EPROTO);
	RC("the same map twice, pairs in two orders", dup_nested, -EPROTO);
}

/* ---- distinct terms ---- */

Test(entity_id, distinct_terms_differ)
{
	static const uint8_t one[] = {97, 1};
	static const uint8_t one_f[] = {70, 0x3f, 0xf0, 0, 0, 0, 0, 0, 0};
	DIFFER("1 vs 1.0", one, one_f);
	static const uint8_t str_a[] = {107, 0, 1, 'a'};
	static const uint8_t bin_a[] = {109, 0, 0, 0, 1, 'a'};
	DIFFER("\"a\" vs <<\"a\">>", str_a, bin_a);
	static const uint8_t nil[] = {106};
	static const uint8_t empty_atom[] = {119, 0};
	static const uint8_t empty_bin[] = {109, 0, 0, 0, 0};
	static const uint8_t empty_tuple[] = {104, 0};
	DIFFER("[] vs ''", nil, empty_atom);
	DIFFER("[] vs <<>>", nil, empty_bin);
	DIFFER("[] vs {}", nil, empty_tuple);
	static const uint8_t a[] = {119, 1, 'a'};
	static const uint8_t A[] = {119, 1, 'A'};
	DIFFER("a vs 'A'", a, A);
	static const uint8_t bits[] = {77, 0, 0, 0, 1, 7, 0};
	static const uint8_t byte[] = {109, 0, 0, 0, 1, 0};
	DIFFER("<<0:7>> vs <<0>>", bits, byte);
	static const uint8_t imp[] = {108, 0, 0, 0, 1, 97, 1, 97, 2};
	static const uint8_t prop[] = {107, 0, 2, 1, 2};
	DIFFER("[1|2] vs [1,2]", imp, prop);
	static const uint8_t tup[] = {104, 1, 97, 1};
	static const uint8_t lst[] = {107, 0, 1, 1};
	DIFFER("{1} vs [1]", tup, lst);

	/* [] and "" are the same term. */
	static const uint8_t empty_str[] = {107, 0, 0};
	CANON("\"\" is []", empty_str, nil);
}

/* ---- refused terms ---- */

static void wrap_tuple(ei_x_buff *x, const void *inner, size_t n)
{
	xb1(x, ERL_SMALL_TUPLE_EXT);
	xb1(x, 2);
	xatom(x, "k");
	xb(x, inner, n);
}

static void check_refused_everywhere(const char *what, const void *t, size_t n)
{
	char desc[128];
	snprintf(desc, sizeof desc, "%s alone", what);
	expect_rc(desc, t, n, -EINVAL);

	ei_x_buff x;
	/* {k, T} */
	sn_x_new(&x);
	wrap_tuple(&x, t, n);
	snprintf(desc, sizeof desc, "%s in a tuple", what);
	expect_rc(desc, x.buff, (size_t)x.index, -EINVAL);
	ei_x_free(&x);

	/* [1, {k, [T]}] */
	sn_x_new(&x);
	xb1(&x, ERL_LIST_EXT);
	xb32(&x, 2);
	xb1(&x, ERL_SMALL_INTEGER_EXT);
	xb1(&x, 1);
	xb1(&x, ERL_SMALL_TUPLE_EXT);
	xb1(&x, 2);
	xatom(&x, "k");
	xb1(&x, ERL_LIST_EXT);
	xb32(&x, 1);
	xb(&x, t, n);
	xb1(&x, ERL_NIL_EXT);
	xb1(&x, ERL_NIL_EXT);
	snprintf(desc, sizeof desc, "%s in nested lists", what);
	expect_rc(desc, x.buff, (size_t)x.index, -EINVAL);
	ei_x_free(&x);

	/* [1 | T] */
	sn_x_new(&x);
	xb1(&x, ERL_LIST_EXT);
	xb32(&x, 1);
	xb1(&x, ERL_SMALL_INTEGER_EXT);
	xb1(&x, 1);
	xb(&x, t, n);
	snprintf(desc, sizeof desc, "%s as a list tail", what);
	expect_rc(desc, x.buff, (size_t)x.index, -EINVAL);
	ei_x_free(&x);

	/* #{a => 1, {k, T} => 2} and #{a => #{b => T}} */
	sn_x_new(&x);
	xb1(&x, ERL_MAP_EXT);
	xb32(&x, 2);
	xatom(&x, "a");
	xb1(&x, ERL_SMALL_INTEGER_EXT);
	xb1(&x, 1);
	wrap_tuple(&x, t, n);
	xb1(&x, ERL_SMALL_INTEGER_EXT);
	xb1(&x, 2);
	snprintf(desc, sizeof desc, "%s in a map key", what);
	expect_rc(desc, x.buff, (size_t)x.index, -EINVAL);
	ei_x_free(&x);

	sn_x_new(&x);
	xb1(&x, ERL_MAP_EXT);
	xb32(&x, 1);
	xatom(&x, "a");
	xb1(&x, ERL_MAP_EXT);
	xb32(&x, 1);
	xatom(&x, "b");
	xb(&x, t, n);
	snprintf(desc, sizeof desc, "%s in a map value", what);
	expect_rc(desc, x.buff, (size_t)x.index, -EINVAL);
	ei_x_free(&x);
}

Test(entity_id, pids_ports_refs_funs_refused)
{
	ei_x_buff x;
	sn_x_new(&x);
	erlang_pid p = sn_pid("peer@127.0.0.1", 0x12345, 7);
	cr_assert_eq(ei_x_encode_pid(&x, &p), 0);
	check_refused_everywhere("pid", x.buff, (size_t)x.index);
	ei_x_free(&x);

	sn_x_new(&x);
	erlang_ref r = sn_ref("peer@127.0.0.1", 42);
	cr_assert_eq(ei_x_encode_ref(&x, &r), 0);
	check_refused_everywhere("ref", x.buff, (size_t)x.index);
	ei_x_free(&x);

	sn_x_new(&x);
	erlang_port po;
	memset(&po, 0, sizeof po);
	strcpy(po.node, "peer@127.0.0.1");
	po.id = 99;
	po.creation = 3;
	cr_assert_eq(ei_x_encode_port(&x, &po), 0);
	check_refused_everywhere("port", x.buff, (size_t)x.index);
	ei_x_free(&x);

	static const uint8_t old_pid[] = {103, 100, 0, 3, 'a', '@', 'b', 0, 0, 0, 1, 0, 0, 0, 2, 3};
	static const uint8_t old_ref[] = {101, 100, 0, 3, 'a', '@', 'b', 0, 0, 0, 7, 1};
	static const uint8_t old_port[] = {102, 100, 0, 3, 'a', '@', 'b', 0, 0, 0, 7, 1};
	check_refused_everywhere("PID_EXT", old_pid, sizeof old_pid);
	check_refused_everywhere("REFERENCE_EXT", old_ref, sizeof old_ref);
	check_refused_everywhere("PORT_EXT", old_port, sizeof old_port);

	/* fun erlang:abs/1 */
	static const uint8_t export_fun[] = {113, 100, 0, 6, 'e', 'r', 'l', 'a', 'n', 'g',
	                                     100, 0, 3, 'a', 'b', 's', 97, 1};
	check_refused_everywhere("EXPORT_EXT", export_fun, sizeof export_fun);
	/* term_to_binary(fun(X) -> X + 1 end) from a module on OTP 25. */
	static const uint8_t new_fun[] = {
		112, 0, 0, 0, 69, 1, 130, 44, 117, 251, 155, 233, 243, 105, 83, 34, 109, 177,
		144, 138, 207, 11, 0, 0, 0, 0, 0, 0, 0, 0, 100, 0, 1, 102, 97, 0, 98, 4, 17, 99,
		175, 88, 100, 0, 13, 110, 111, 110, 111, 100, 101, 64, 110, 111, 104, 111, 115,
		116, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 0, 0};
	check_refused_everywhere("NEW_FUN_EXT", new_fun, sizeof new_fun);
}

/* ---- malformed input ---- */

Test(entity_id, malformed_refused)
{
	static const uint8_t trailing[] = {97, 1, 97};
	ei_x_buff x;
	sn_x_new(&x);
	char *b = sn_dup_exact(trailing, sizeof trailing);
	cr_assert_eq(entity_id_canonical(b, sizeof trailing, &x), -EPROTO, "trailing byte accepted");
	cr_assert_eq(entity_id_canonical(b, 0, &x), -EPROTO, "empty input accepted");
	cr_assert_eq(x.index, 0);
	free(b);

	/* Lies that term_validate would have caught; refused all the same. */
	static const uint8_t lies[][12] = {
		{108, 0xff, 0xff, 0xff, 0xff, 97, 1, 106},   /* list longer than input */
		{116, 0x10, 0, 0, 0, 97, 1, 97, 1},          /* map longer than input */
		{105, 0x7f, 0, 0, 0, 97, 1},                 /* tuple longer than input */
		{109, 0, 0, 1, 0, 'a'},                      /* binary longer than input */
		{77, 0, 0, 0, 1, 0, 0},                      /* 0 bits in the last byte */
		{77, 0, 0, 0, 1, 9, 0},                      /* 9 bits in the last byte */
		{82, 0},                                     /* atom cache reference */
		{200},                                       /* unknown tag */
	};
	const size_t lens[] = {8, 9, 7, 6, 7, 7, 2, 1};
	for (size_t k = 0; k < SN_ARRAY_LEN(lens); k++) {
		b = sn_dup_exact(lies[k], lens[k]);
		int rc = entity_id_canonical(b, lens[k], &x);
		cr_assert_eq(rc, -EPROTO, "lie %zu accepted (%d)", k, rc);
		cr_assert_eq(x.index, 0);
		free(b);
	}
	ei_x_free(&x);
}

/* Flipping bytes of valid terms: whatever term_validate lets through is
 * canonicalised or refused, never crashes, and an accepted output is stable. */
Test(entity_id, mutated_terms_never_crash)
{
	static const uint8_t seed[] = {
		116, 0, 0, 0, 3,
		119, 1, 'k', 108, 0, 0, 0, 2, 97, 1, 107, 0, 2, 'a', 'b', 106,
		104, 2, 110, 2, 0, 1, 0, 77, 0, 0, 0, 1, 3, 0xff,
		100, 0, 2, 'z', 0xE9, 116, 0, 0, 0, 2, 97, 1, 97, 2, 97, 3, 70, 0x3f, 0xf0, 0, 0, 0, 0, 0, 0,
		108, 0, 0, 0, 0, 107, 0, 1, 5,
	};
	uint32_t rng = 12345;
	uint8_t buf[sizeof seed];
	size_t accepted = 0;
	for (int iter = 0; iter < 20000; iter++) {
		memcpy(buf, seed, sizeof seed);
		int flips = 1 + iter % 3;
		for (int f = 0; f < flips; f++) {
			rng = rng * 1103515245u + 12345u;
			size_t pos = (rng >> 8) % sizeof seed;
			rng = rng * 1103515245u + 12345u;
			buf[pos] = (uint8_t)(rng >> 16);
		}
		size_t len = sizeof seed - (size_t)(iter % 5 == 0 ? (rng >> 4) % 8 : 0);
		ei_x_buff x;
		sn_x_new(&x);
		int rc = validated_canon(buf, len, &x);
		cr_assert(rc == 0 || rc == -EPROTO || rc == -EINVAL, "rc %d", rc);
		if (rc == 0) {
			accepted++;
			ei_x_buff y;
			sn_x_new(&y);
			cr_assert_eq(validated_canon(x.buff, (size_t)x.index, &y), 0);
			cr_assert_eq(y.index, x.index);
			cr_assert_eq(memcmp(x.buff, y.buff, (size_t)x.index), 0);
			ei_x_free(&y);
		}
		ei_x_free(&x);
	}
	cr_assert_gt(accepted, 100, "only %zu mutants accepted", accepted);
}

/* ---- deep nesting ---- */

#define DEEP 100000

static void check_deep(const char *what, ei_x_buff *in, ei_x_buff *want)
{
	ei_x_buff x;
	sn_x_new(&x);
	int rc = validated_canon(in->buff, (size_t)in->index, &x);
	cr_assert_eq(rc, 0, "%s: refused (%d)", what, rc);
	cr_assert_eq(x.index, want->index, "%s: %d bytes, expected %d", what, x.index, want->index);
	cr_assert_eq(memcmp(x.buff, want->buff, (size_t)x.index), 0, "%s: bytes differ", what);
	ei_x_buff y;
	sn_x_new(&y);
	cr_assert_eq(validated_canon(x.buff, (size_t)x.index, &y), 0, "%s: output refused", what);
	cr_assert_eq(y.index, x.index);
	cr_assert_eq(memcmp(x.buff, y.buff, (size_t)x.index), 0, "%s: not idempotent", what);
	ei_x_free(&x);
	ei_x_free(&y);
}

Test(entity_id, deep_tuples_and_lists)
{
	ei_x_buff in, want;
	/* {{{...{}...}}} with LARGE_TUPLE_EXT headers */
	sn_x_new(&in);
	sn_x_new(&want);
	for (int k = 0; k < DEEP; k++) {
		xb1(&in, ERL_LARGE_TUPLE_EXT);
		xb32(&in, 1);
		xb1(&want, ERL_SMALL_TUPLE_EXT);
		xb1(&want, 1);
	}
	xb1(&in, ERL_LARGE_TUPLE_EXT);
	xb32(&in, 0);
	xb1(&want, ERL_SMALL_TUPLE_EXT);
	xb1(&want, 0);
	check_deep("deep tuples", &in, &want);
	ei_x_free(&in);
	ei_x_free(&want);

	/* [[[...[a]...]]] */
	sn_x_new(&in);
	sn_x_new(&want);
	for (int k = 0; k < DEEP; k++) {
		xb1(&in, ERL_LIST_EXT);
		xb32(&in, 1);
		xb1(&want, ERL_LIST_EXT);
		xb32(&want, 1);
	}
	xatom(&in, "a");
	xatom(&want, "a");
	for (int k = 0; k < DEEP; k++) {
		xb1(&in, ERL_NIL_EXT);
		xb1(&want, ERL_NIL_EXT);
	}
	check_deep("deep lists", &in, &want);
	ei_x_free(&in);
	ei_x_free(&want);

	/* LIST_EXT(0, LIST_EXT(0, ... 5)): just 5. */
	sn_x_new(&in);
	sn_x_new(&want);
	for (int k = 0; k < DEEP; k++) {
		xb1(&in, ERL_LIST_EXT);
		xb32(&in, 0);
	}
	xb1(&in, ERL_SMALL_INTEGER_EXT);
	xb1(&in, 5);
	xb1(&want, ERL_SMALL_INTEGER_EXT);
	xb1(&want, 5);
	check_deep("deep empty list segments", &in, &want);
	ei_x_free(&in);
	ei_x_free(&want);

	/* [1 | [1 | [1 | ... [1 | 2]]]]: one flat improper list. */
	sn_x_new(&in);
	sn_x_new(&want);
	xb1(&want, ERL_LIST_EXT);
	xb32(&want, DEEP);
	for (int k = 0; k < DEEP; k++) {
		xb1(&in, ERL_LIST_EXT);
		xb32(&in, 1);
		xb1(&in, ERL_SMALL_INTEGER_EXT);
		xb1(&in, 1);
		xb1(&want, ERL_SMALL_INTEGER_EXT);
		xb1(&want, 1);
	}
	xb1(&in, ERL_SMALL_INTEGER_EXT);
	xb1(&in, 2);
	xb1(&want, ERL_SMALL_INTEGER_EXT);
	xb1(&want, 2);
	check_deep("long tail chain", &in, &want);
	ei_x_free(&in);
	ei_x_free(&want);
}

Test(entity_id, deep_maps)
{
	ei_x_buff in, want;
	/* #{z => #{z => ... #{z => [], a => 1} ..., a => 1}, a => 1}: every
	 * level's pairs are reordered. */
	sn_x_new(&in);
	sn_x_new(&want);
	for (int k = 0; k < DEEP; k++) {
		xb1(&in, ERL_MAP_EXT);
		xb32(&in, 2);
		xatom(&in, "z");
		xb1(&want, ERL_MAP_EXT);
		xb32(&want, 2);
		xatom(&want, "a");
		xb1(&want, ERL_SMALL_INTEGER_EXT);
		xb1(&want, 1);
		xatom(&want, "z");
	}
	xb1(&in, ERL_NIL_EXT);
	xb1(&want, ERL_NIL_EXT);
	for (int k = 0; k < DEEP; k++) {
		xatom(&in, "a");
		xb1(&in, ERL_SMALL_INTEGER_EXT);
		xb1(&in, 1);
	}
	check_deep("deep maps in values", &in, &want);
	ei_x_free(&in);
	ei_x_free(&want);

	/* The same nesting through keys: #{#{... => 1, 0 => 1} => 1, 0 => 1}.
	 * Key 0 (97 0) sorts before the map key (116 ...), so again every
	 * level is reordered. */
	sn_x_new(&in);
	sn_x_new(&want);
	for (int k = 0; k < DEEP; k++) {
		xb1(&in, ERL_MAP_EXT);
		xb32(&in, 2);
		xb1(&want, ERL_MAP_EXT);
		xb32(&want, 2);
		xb1(&want, ERL_SMALL_INTEGER_EXT);
		xb1(&want, 0);
		xb1(&want, ERL_SMALL_INTEGER_EXT);
		xb1(&want, 1);
	}
	xb1(&in, ERL_NIL_EXT);
	xb1(&want, ERL_NIL_EXT);
	for (int k = 0; k < DEEP; k++) {
		xb1(&in, ERL_SMALL_INTEGER_EXT); /* value of the map key */
		xb1(&in, 1);
		xb1(&in, ERL_SMALL_INTEGER_EXT); /* key 0 */
		xb1(&in, 0);
		xb1(&in, ERL_SMALL_INTEGER_EXT); /* its value */
		xb1(&in, 1);
		xb1(&want, ERL_SMALL_INTEGER_EXT);
		xb1(&want, 1);
	}
	check_deep("deep maps in keys", &in, &want);
	ei_x_free(&in);
	ei_x_free(&want);

	/* A pid at the bottom of it all. */
	sn_x_new(&in);
	for (int k = 0; k < DEEP; k++) {
		xb1(&in, ERL_MAP_EXT);
		xb32(&in, 1);
		xatom(&in, "k");
	}
	erlang_pid p = sn_pid("peer@127.0.0.1", 1, 2);
	cr_assert_eq(ei_x_encode_pid(&in, &p), 0);
	sn_x_new(&want);
	cr_assert_eq(validated_canon(in.buff, (size_t)in.index, &want), -EINVAL);
	cr_assert_eq(want.index, 0);
	ei_x_free(&in);
	ei_x_free(&want);
}

/* ---- ids that are one scalar ---- */

/* A scalar id is written by one read_term, without the container machinery
 * a tuple goes through: both paths must give the same bytes, and a scalar
 * followed by anything must be refused. */
Test(entity_id, scalar_ids_agree_with_the_container_path)
{
	static const uint8_t small_int[] = {97, 7};
	static const uint8_t int_small[] = {98, 0, 0, 0, 7};          /* INTEGER_EXT 7 -> 97, 7 */
	static const uint8_t int_big[] = {98, 0x80, 0, 0, 0};
	static const uint8_t bignum[] = {110, 3, 0, 7, 0, 0};          /* padded 7 */
	static const uint8_t latin1_atom[] = {100, 0, 4, 'c', 'a', 'f', 0xE9};
	static const uint8_t small_latin1[] = {115, 2, 'o', 'k'};
	static const uint8_t utf8_atom[] = {118, 0, 2, 0xC3, 0xB6};
	static const uint8_t small_utf8[] = {119, 3, 'f', 'o', 'o'};
	static const uint8_t binary[] = {109, 0, 0, 0, 3, 'a', 'b', 'c'};
	static const uint8_t bits[] = {77, 0, 0, 0, 1, 3, 0xFF};
	static const uint8_t nil[] = {106};
	static const uint8_t string[] = {107, 0, 2, 1, 2};
	static const uint8_t empty_string[] = {107, 0, 0};
	static const uint8_t new_float[] = {70, 0x3F, 0xF0, 0, 0, 0, 0, 0, 0};
	static const uint8_t empty_tuple[] = {104, 0};
	static const uint8_t empty_map[] = {116, 0, 0, 0, 0};
	static const struct {
		const char *what;
		const uint8_t *b;
		size_t n;
	} ids[] = {
		{"small integer", small_int, sizeof small_int},
		{"INTEGER_EXT 7", int_small, sizeof int_small},
		{"INTEGER_EXT min", int_big, sizeof int_big},
		{"padded bignum", bignum, sizeof bignum},
		{"ATOM_EXT", latin1_atom, sizeof latin1_atom},
		{"SMALL_ATOM_EXT", small_latin1, sizeof small_latin1},
		{"ATOM_UTF8_EXT", utf8_atom, sizeof utf8_atom},
		{"SMALL_ATOM_UTF8_EXT", small_utf8, sizeof small_utf8},
		{"binary", binary, sizeof binary},
		{"bitstring", bits, sizeof bits},
		{"nil", nil, sizeof nil},
		{"string", string, sizeof string},
		{"empty string", empty_string, sizeof empty_string},
		{"float", new_float, sizeof new_float},
		{"empty tuple", empty_tuple, sizeof empty_tuple},
		{"empty map", empty_map, sizeof empty_map},
	};
	for (size_t k = 0; k < SN_ARRAY_LEN(ids); k++) {
		size_t n;
		char *alone = canon(ids[k].what, ids[k].b, ids[k].n, &n);

		/* {Id}: the same bytes after the tuple header. */
		ei_x_buff t;
		sn_x_new(&t);
		xb1(&t, ERL_SMALL_TUPLE_EXT);
		xb1(&t, 1);
		xb(&t, ids[k].b, ids[k].n);
		size_t tn;
		char *wrapped = canon(ids[k].what, t.buff, (size_t)t.index, &tn);
		cr_assert_eq(tn, n + 2, "%s: alone %zu bytes, in a tuple %zu", ids[k].what, n, tn);
		cr_assert_eq(memcmp(wrapped + 2, alone, n), 0, "%s: the two paths differ", ids[k].what);
		free(wrapped);
		free(alone);

		/* Anything after the scalar is refused, the output untouched. */
		xb1(&t, 97);
		xb1(&t, 1);
		ei_x_buff out;
		sn_x_new(&out);
		xb(&out, "pre", 3);
		char *b = sn_dup_exact(t.buff + 2, ids[k].n + 2);
		cr_assert_eq(entity_id_canonical(b, ids[k].n + 2, &out), -EPROTO, "%s: trailing term accepted",
			     ids[k].what);
		cr_assert_eq(out.index, 3);
		free(b);
		ei_x_free(&out);
		ei_x_free(&t);
	}
}
