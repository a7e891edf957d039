/*
 * test_node_name.c — node names read from peers' messages: the sized atom
 * decoder never writes past its buffer, and node_name_decode takes exactly
 * the valid names that fit NODE_NAME_BUF, in every atom encoding.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <ei.h>

#include "protocol/node_name.h"
#include "etf/term.h"
#include "unit_helpers.h"

/* `units` copies of `unit`, then "@h": a node name's text. */
static char *name_of(const char *unit, size_t units)
{
	size_t u = strlen(unit);
	char *s = calloc(1, u * units + 3);
	cr_assert_not_null(s);
	for (size_t k = 0; k < units; k++)
		memcpy(s + k * u, unit, u);
	memcpy(s + u * units, "@h", 3);
	return s;
}

/* The atom `text` encoded as UTF-8 (utf8) or Latin-1 text, exact size. */
static char *atom_of(const char *text, bool utf8, size_t *len)
{
	ei_x_buff x;
	sn_x_new(&x);
	cr_assert_eq(ei_x_encode_atom_len_as(&x, text, (int)strlen(text), utf8 ? ERLANG_UTF8 : ERLANG_LATIN1,
					     utf8 ? ERLANG_UTF8 : ERLANG_LATIN1),
		     0);
	*len = (size_t)x.index;
	char *a = sn_dup_exact(x.buff, *len);
	ei_x_free(&x);
	return a;
}

Test(node_name, a_sized_decode_refuses_text_longer_than_its_buffer_and_writes_nothing_past_it)
{
	/* 129 two-byte characters: 258 bytes of UTF-8, as in the member list
	 * that was overrun. */
	char *text = name_of("\xC3\xA9", 129);
	size_t len;
	char *a = atom_of(text, true, &len);
	for (size_t size = 1; size <= strlen(text) + 1; size++) {
		char *out = malloc(size); /* exact: ASan sees any write past it */
		cr_assert_not_null(out);
		size_t i = 0;
		int rc = term_get_atom_sized(a, &i, out, size);
		if (size > strlen(text)) {
			cr_assert_eq(rc, 0);
			cr_assert_str_eq(out, text);
			cr_assert_eq(i, len);
		} else {
			cr_assert_eq(rc, -EPROTO, "%zu bytes", size);
			cr_assert_eq(i, 0u, "nothing consumed");
		}
		free(out);
	}
	free(a);
	free(text);
}

Test(node_name, latin1_text_is_measured_as_the_utf8_it_becomes)
{
	/* 127 Latin-1 bytes 0xE9 become 254 UTF-8 bytes: "...@h" is 256, one
	 * too many; 126 of them fit (254 with the host). */
	for (size_t units = 125; units <= 127; units++) {
		char *text = name_of("\xE9", units);
		size_t len;
		char *a = atom_of(text, false, &len);
		char out[NODE_NAME_BUF];
		size_t i = 0;
		int rc = node_name_decode(a, &i, out);
		cr_assert_eq(rc, units * 2 + 2 < NODE_NAME_BUF ? 0 : -EPROTO, "%zu Latin-1 characters", units);
		free(a);
		free(text);
	}
}

Test(node_name, only_valid_names_that_fit_are_decoded)
{
	static const struct {
		const char *text;
		int rc;
	} cases[] = {
		{"a@h", 0},       {"shardnode@127.0.0.1", 0}, {"noat", -EPROTO}, {"@h", -EPROTO},
		{"a@", -EPROTO},  {"a@b@c", -EPROTO},        {"a\x01@h", -EPROTO}, {"", -EPROTO},
	};
	for (size_t k = 0; k < SN_ARRAY_LEN(cases); k++) {
		size_t len;
		char *a = atom_of(cases[k].text, true, &len);
		char out[NODE_NAME_BUF];
		size_t i = 0;
		cr_assert_eq(node_name_decode(a, &i, out), cases[k].rc, "%s", cases[k].text);
		if (cases[k].rc == 0) {
			cr_assert_str_eq(out, cases[k].text);
			cr_assert_eq(i, len);
		} else {
			cr_assert_eq(i, 0u);
		}
		free(a);
	}
	/* The longest ASCII names: an atom holds 255 characters, a node name
	 * 255 bytes, so every ASCII atom fits (only multi-byte text can be
	 * too long, above). */
	for (size_t units = 252; units <= 253; units++) {
		char *text = name_of("a", units);
		size_t len;
		char *a = atom_of(text, true, &len);
		char out[NODE_NAME_BUF];
		size_t i = 0;
		cr_assert_eq(node_name_decode(a, &i, out), 0, "%zu", units);
		cr_assert_eq(strlen(out), units + 2);
		free(a);
		free(text);
	}
	/* Not an atom. */
	ei_x_buff x;
	sn_x_new(&x);
	cr_assert_eq(ei_x_encode_long(&x, 7), 0);
	char out[NODE_NAME_BUF];
	size_t i = 0;
	cr_assert_eq(node_name_decode(x.buff, &i, out), -EPROTO);
	ei_x_free(&x);
}
