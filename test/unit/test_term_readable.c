/*
 * test_term_readable.c — whether a BEAM node could read a term naming it
 * (term_readable.h): the pids, references and ports found by fuzzing, the
 * bounds of what a BEAM hands out, every encoding of the node's name, and
 * identifiers anywhere in a term, funs included. The bounds are the ones
 * binary_to_term/1 of OTP 25 refuses for its own node.
 */
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <ei.h>

#include "etf/term.h"
#include "etf/term_validate.h"
#include "etf/term_readable.h"
#include "unit_helpers.h"

#define READER "reader@127.0.0.1"
#define CREATION 0x6b070eb9u

/* The term in an exact-size block (an over-read is an ASan report),
 * validated first, as every term the node hands back is. */
static bool readable(const void *term, size_t len, const char *node, uint32_t creation)
{
	char *b = sn_dup_exact(term, len);
	size_t end = 0;
	cr_assert_eq(term_validate(b, len, &end), 0, "the test's term is no valid term");
	cr_assert_eq(end, len);
	bool r = term_readable_by(b, len, node, creation);
	free(b);
	return r;
}

static bool readable_x(ei_x_buff *x)
{
	bool r = readable(x->buff, (size_t)x->index, READER, CREATION);
	ei_x_free(x);
	return r;
}

static ei_x_buff pid_x(const char *node, uint32_t num, uint32_t serial, uint32_t creation)
{
	erlang_pid p;
	memset(&p, 0, sizeof p);
	strcpy(p.node, node);
	p.num = num;
	p.serial = serial;
	p.creation = creation;
	ei_x_buff x;
	sn_x_new(&x);
	cr_assert_eq(ei_x_encode_pid(&x, &p), 0);
	return x;
}

static ei_x_buff ref_x(const char *node, int words, uint32_t first, uint32_t creation)
{
	erlang_ref r;
	memset(&r, 0, sizeof r);
	strcpy(r.node, node);
	r.len = words;
	r.n[0] = first;
	r.n[1] = 0xffffffffu;
	r.creation = creation;
	ei_x_buff x;
	sn_x_new(&x);
	cr_assert_eq(ei_x_encode_ref(&x, &r), 0);
	return x;
}

static ei_x_buff port_x(const char *node, uint64_t id, uint32_t creation)
{
	erlang_port p;
	memset(&p, 0, sizeof p);
	strcpy(p.node, node);
	p.id = id;
	p.creation = creation;
	ei_x_buff x;
	sn_x_new(&x);
	cr_assert_eq(ei_x_encode_port(&x, &p), 0);
	return x;
}

Test(term_readable, the_terms_found_by_fuzzing)
{
	/* <nonode@nohost.32768.0> and a reference whose first word is 2^18,
	 * read by nonode@nohost of creation 0. */
	static const uint8_t pid[] = {0x58, 0x77, 0x0d, 'n', 'o', 'n', 'o', 'd', 'e', '@', 'n', 'o', 'h', 'o', 's',
				      't', 0, 0, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0};
	static const uint8_t ref[] = {0x5a, 0, 3, 0x77, 0x0d, 'n', 'o', 'n', 'o', 'd', 'e', '@', 'n', 'o', 'h', 'o',
				      's', 't', 0, 0, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
	cr_assert_not(readable(pid, sizeof pid, "nonode@nohost", 0));
	cr_assert_not(readable(ref, sizeof ref, "nonode@nohost", 0));
	/* Any other node, or the same name with another creation, reads them. */
	cr_assert(readable(pid, sizeof pid, READER, 0));
	cr_assert(readable(pid, sizeof pid, "nonode@nohost", 1));
	cr_assert(readable(ref, sizeof ref, "nonode@nohos", 0));
}

Test(term_readable, pids_at_the_bounds)
{
	ei_x_buff x = pid_x(READER, 0x7fff, 0x1fff, CREATION);
	cr_assert(readable_x(&x));
	x = pid_x(READER, 0x8000, 0, CREATION);
	cr_assert_not(readable_x(&x));
	x = pid_x(READER, 0, 0x2000, CREATION);
	cr_assert_not(readable_x(&x));
	x = pid_x(READER, 0xffffffffu, 0xffffffffu, CREATION);
	cr_assert_not(readable_x(&x));
	x = pid_x(READER, 0x8000, 0, CREATION + 1);
	cr_assert(readable_x(&x));
	x = pid_x("other@127.0.0.1", 0xffffffffu, 0xffffffffu, CREATION);
	cr_assert(readable_x(&x));

	/* PID_EXT: a creation of two bits, compared as a number. */
	static const uint8_t old_pid[] = {103, 119, 3, 'a', '@', 'b', 0, 0, 0x80, 0, 0, 0, 0, 0, 3};
	cr_assert_not(readable(old_pid, sizeof old_pid, "a@b", 3));
	cr_assert(readable(old_pid, sizeof old_pid, "a@b", CREATION));
}

Test(term_readable, references_and_ports_at_the_bounds)
{
	ei_x_buff x = ref_x(READER, 3, 0x3ffff, CREATION);
	cr_assert(readable_x(&x));
	x = ref_x(READER, 3, 0x40000, CREATION);
	cr_assert_not(readable_x(&x));
	x = ref_x(READER, 1, 0x3ffff, CREATION);
	cr_assert(readable_x(&x));
	x = ref_x(READER, 4, 1, CREATION);
	cr_assert_not(readable_x(&x));
	x = ref_x(READER, 5, 1, CREATION);
	cr_assert_not(readable_x(&x));
	x = ref_x("other@127.0.0.1", 5, 0x40000, CREATION);
	cr_assert(readable_x(&x));

	/* REFERENCE_EXT: one word, which the validator already holds to 18
	 * bits, so the BEAM reads every one. */
	static const uint8_t old_ref[] = {101, 119, 3, 'a', '@', 'b', 0, 3, 0xff, 0xff, 2};
	cr_assert(readable(old_ref, sizeof old_ref, "a@b", 2));
	/* NEW_REFERENCE_EXT: its first word is held to 18 bits for every
	 * node; four words name no reference a BEAM makes. */
	static const uint8_t new_ref[] = {114, 0, 4, 119, 3, 'a', '@', 'b', 2, 0, 3, 0, 0, 0, 0, 0, 1, 0, 0, 0, 2,
					  0, 0, 0, 3};
	cr_assert_not(readable(new_ref, sizeof new_ref, "a@b", 2));
	cr_assert(readable(new_ref, sizeof new_ref, "a@b", 1));

	x = port_x(READER, 0xfffffff, CREATION);
	cr_assert(readable_x(&x));
	x = port_x(READER, 0x10000000, CREATION);
	cr_assert_not(readable_x(&x));
	x = port_x(READER, 1ULL << 40, CREATION); /* V4_PORT_EXT */
	cr_assert_not(readable_x(&x));
	x = port_x("other@127.0.0.1", 1ULL << 40, CREATION);
	cr_assert(readable_x(&x));
	static const uint8_t old_port[] = {102, 119, 3, 'a', '@', 'b', 0x10, 0, 0, 0, 2};
	cr_assert_not(readable(old_port, sizeof old_port, "a@b", 2));
}

Test(term_readable, the_name_in_every_atom_encoding)
{
	/* 'a@b' as ATOM_EXT (Latin-1) and as SMALL_ATOM_EXT. */
	static const uint8_t latin1[] = {88, 100, 0, 3, 'a', '@', 'b', 0, 0, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 7};
	static const uint8_t small[] = {88, 115, 3, 'a', '@', 'b', 0, 0, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 7};
	cr_assert_not(readable(latin1, sizeof latin1, "a@b", 7));
	cr_assert_not(readable(small, sizeof small, "a@b", 7));
	/* A name beyond ASCII: 'é@b' in Latin-1 is not its UTF-8 bytes. */
	static const uint8_t e_latin1[] = {88, 115, 3, 0xe9, '@', 'b', 0, 0, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 7};
	cr_assert_not(readable(e_latin1, sizeof e_latin1, "\xc3\xa9@b", 7));
	cr_assert(readable(e_latin1, sizeof e_latin1, "e@b", 7));
	/* The name as a prefix of another, and appearing only as an atom. */
	ei_x_buff x = pid_x(READER "x", 0x8000, 0, CREATION);
	cr_assert(readable_x(&x));
	sn_x_new(&x);
	cr_assert_eq(ei_x_encode_tuple_header(&x, 2), 0);
	cr_assert_eq(ei_x_encode_atom(&x, READER), 0);
	cr_assert_eq(ei_x_encode_binary(&x, READER, sizeof READER - 1), 0);
	cr_assert(readable_x(&x));
}

Test(term_readable, anywhere_in_a_term)
{
	ei_x_buff bad = pid_x(READER, 0x8000, 0, CREATION);
	ei_x_buff good = pid_x(READER, 7, 0, CREATION);
	/* {ok, [1, #{k => {Good, Bad}}]} */
	ei_x_buff x;
	sn_x_new(&x);
	cr_assert_eq(ei_x_encode_tuple_header(&x, 2) | ei_x_encode_atom(&x, "ok") | ei_x_encode_list_header(&x, 2) |
			     ei_x_encode_long(&x, 1) | ei_x_encode_map_header(&x, 1) | ei_x_encode_atom(&x, "k") |
			     ei_x_encode_tuple_header(&x, 2),
		     0);
	cr_assert_eq(ei_x_append_buf(&x, good.buff, good.index), 0);
	cr_assert_eq(ei_x_append_buf(&x, bad.buff, bad.index), 0);
	cr_assert_eq(ei_x_encode_empty_list(&x), 0);
	cr_assert_not(readable_x(&x));

	/* The same with a good pid in its place. */
	sn_x_new(&x);
	cr_assert_eq(ei_x_encode_list_header(&x, 2), 0);
	cr_assert_eq(ei_x_append_buf(&x, good.buff, good.index), 0);
	cr_assert_eq(ei_x_append_buf(&x, good.buff, good.index), 0);
	cr_assert_eq(ei_x_encode_empty_list(&x), 0);
	cr_assert(readable_x(&x));

	/* In a fun: as its creator, and as a free variable after an export. */
	static const uint8_t head[] = {112, 0, 0, 0, 0, 1, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16,
				       0, 0, 0, 0, 0, 0, 0, 2, 119, 2, 'l', 'f', 97, 0, 97, 7};
	static const uint8_t export[] = {113, 119, 1, 'm', 119, 1, 'f', 97, 1};
	for (int where = 0; where < 2; where++) {
		sn_x_new(&x);
		cr_assert_eq(ei_x_append_buf(&x, (const char *)head, sizeof head), 0);
		cr_assert_eq(ei_x_append_buf(&x, where == 0 ? bad.buff : good.buff, good.index), 0);
		cr_assert_eq(ei_x_append_buf(&x, (const char *)export, sizeof export), 0);
		cr_assert_eq(ei_x_append_buf(&x, where == 1 ? bad.buff : good.buff, good.index), 0);
		sn_put32((uint8_t *)x.buff + 1, (uint32_t)(x.index - 1));
		cr_assert_not(readable_x(&x), "the pid at %d", where);
	}
	ei_x_free(&bad);
	ei_x_free(&good);
}

/* A term shorter than the shortest identifier (7 bytes: a reference of no
 * words around a one-letter atom) names no node: it is readable, and the
 * node's name is not read at all (here a name with no terminating NUL,
 * which AddressSanitizer would catch being read). Every reply of the
 * built-in counters is such a term. */
Test(term_readable, a_term_too_short_for_an_identifier_does_not_read_the_name)
{
	static const uint8_t small_int[] = {97, 42}, integer[] = {98, 0, 1, 0, 0}, ok[] = {119, 2, 'o', 'k'},
			     nil[] = {106}, empty_tuple[] = {104, 0}, six[] = {109, 0, 0, 0, 1, 'x'};
	const struct {
		const uint8_t *b;
		size_t len;
	} terms[] = {{small_int, sizeof small_int}, {integer, sizeof integer}, {ok, sizeof ok},
		     {nil, sizeof nil},             {empty_tuple, sizeof empty_tuple}, {six, sizeof six}};
	char *unterminated = malloc(3);
	cr_assert_not_null(unterminated);
	memcpy(unterminated, "a@b", 3);
	for (size_t k = 0; k < sizeof terms / sizeof terms[0]; k++) {
		cr_assert_lt(terms[k].len, 7);
		cr_assert(readable(terms[k].b, terms[k].len, unterminated, 2), "term %zu", k);
	}
	free(unterminated);
}
