/*
 * test_term_tag.c — the classification of the external format's tags
 * (term_tag.h): every tag the node reads has its kind, every other byte
 * none, and what phash2 and the canonical ids make of each kind of thing.
 */
#include <errno.h>

#include <criterion/criterion.h>
#include <ei.h>

#include "etf/entity_id.h"
#include "etf/phash2.h"
#include "etf/term_tag.h"
#include "unit_helpers.h"

static const struct {
	unsigned char tag;
	enum term_kind kind;
} known[] = {
	{ERL_SMALL_INTEGER_EXT, TERM_KIND_INTEGER}, {ERL_INTEGER_EXT, TERM_KIND_INTEGER},
	{ERL_SMALL_BIG_EXT, TERM_KIND_INTEGER},     {ERL_LARGE_BIG_EXT, TERM_KIND_INTEGER},
	{NEW_FLOAT_EXT, TERM_KIND_FLOAT},           {ERL_FLOAT_EXT, TERM_KIND_FLOAT},
	{ERL_ATOM_EXT, TERM_KIND_ATOM},             {ERL_SMALL_ATOM_EXT, TERM_KIND_ATOM},
	{ERL_ATOM_UTF8_EXT, TERM_KIND_ATOM},        {ERL_SMALL_ATOM_UTF8_EXT, TERM_KIND_ATOM},
	{ERL_NIL_EXT, TERM_KIND_NIL},               {ERL_STRING_EXT, TERM_KIND_STRING},
	{ERL_BINARY_EXT, TERM_KIND_BINARY},         {ERL_BIT_BINARY_EXT, TERM_KIND_BITSTRING},
	{ERL_SMALL_TUPLE_EXT, TERM_KIND_TUPLE},     {ERL_LARGE_TUPLE_EXT, TERM_KIND_TUPLE},
	{ERL_LIST_EXT, TERM_KIND_LIST},             {ERL_MAP_EXT, TERM_KIND_MAP},
	{ERL_PID_EXT, TERM_KIND_PID},               {ERL_NEW_PID_EXT, TERM_KIND_PID},
	{ERL_PORT_EXT, TERM_KIND_PORT},             {ERL_NEW_PORT_EXT, TERM_KIND_PORT},
	{ERL_V4_PORT_EXT, TERM_KIND_PORT},          {ERL_REFERENCE_EXT, TERM_KIND_REF},
	{ERL_NEW_REFERENCE_EXT, TERM_KIND_REF},     {ERL_NEWER_REFERENCE_EXT, TERM_KIND_REF},
	{ERL_NEW_FUN_EXT, TERM_KIND_FUN},           {ERL_EXPORT_EXT, TERM_KIND_EXPORT},
};

Test(term_tag, every_tag_has_its_kind_and_every_other_byte_none)
{
	for (unsigned t = 0; t < 256; t++) {
		enum term_kind want = TERM_KIND_NONE;
		for (size_t k = 0; k < SN_ARRAY_LEN(known); k++)
			if (known[k].tag == t)
				want = known[k].kind;
		cr_assert_eq(term_kind_of((unsigned char)t), want, "tag %u", t);
	}
	/* Atom cache references, the obsolete fun, a version byte: none. */
	cr_assert_eq(term_kind_of(82), TERM_KIND_NONE);
	cr_assert_eq(term_kind_of(ERL_FUN_EXT), TERM_KIND_NONE);
	cr_assert_eq(term_kind_of(131), TERM_KIND_NONE);
}

Test(term_tag, things_of_one_nodes_life_are_no_entity_id)
{
	cr_assert(term_kind_names_a_thing(TERM_KIND_PID));
	cr_assert(term_kind_names_a_thing(TERM_KIND_PORT));
	cr_assert(term_kind_names_a_thing(TERM_KIND_REF));
	cr_assert(term_kind_names_a_thing(TERM_KIND_FUN));
	cr_assert(term_kind_names_a_thing(TERM_KIND_EXPORT));
	cr_assert_not(term_kind_names_a_thing(TERM_KIND_ATOM));
	cr_assert(term_kind_is_identifier(TERM_KIND_REF));
	cr_assert_not(term_kind_is_identifier(TERM_KIND_FUN));
	/* A pid as an id: phash2 and the canonical ids both say -EINVAL. */
	ei_x_buff x, out;
	sn_x_new(&x);
	sn_x_new(&out);
	erlang_pid pid = {.num = 1, .serial = 0, .creation = 1};
	snprintf(pid.node, sizeof pid.node, "a@b");
	cr_assert_eq(ei_x_encode_pid(&x, &pid), 0);
	uint32_t h;
	cr_assert_eq(phash2_term(x.buff, (size_t)x.index, &h), -EINVAL);
	cr_assert_eq(entity_id_canonical(x.buff, (size_t)x.index, &out), -EINVAL);
	ei_x_free(&x);
	ei_x_free(&out);
}
