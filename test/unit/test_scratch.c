/*
 * test_scratch.c — reused encode buffers: reuse, nesting, release after a
 * big term.
 */
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <ei.h>

#include "base/scratch.h"
#include "unit_helpers.h"

Test(scratch, allocates_on_first_use_and_reuses)
{
	struct scratch s;
	scratch_init(&s);
	cr_assert_null(s.x.buff, "nothing allocated before first use");
	ei_x_buff spare;
	ei_x_buff *x = scratch_get(&s, &spare);
	cr_assert_eq(x, &s.x, "a free scratch hands out its own buffer");
	cr_assert_eq(x->index, 0);
	cr_assert_eq(x->buffsz, SCRATCH_INITIAL);
	cr_assert_eq(ei_x_encode_atom(x, "hello"), 0);
	char *first = x->buff;
	scratch_put(&s, x);
	cr_assert_not(s.busy);

	x = scratch_get(&s, &spare);
	cr_assert_eq(x, &s.x);
	cr_assert_eq(x->buff, first, "the same memory is reused");
	cr_assert_eq(x->index, 0, "handed out empty");
	scratch_put(&s, x);
	scratch_free(&s);
	cr_assert_null(s.x.buff);
	scratch_free(&s); /* twice is harmless */
}

Test(scratch, busy_scratch_hands_out_the_spare)
{
	struct scratch s;
	scratch_init(&s);
	ei_x_buff spare_outer, spare_inner;
	ei_x_buff *outer = scratch_get(&s, &spare_outer);
	cr_assert_eq(outer, &s.x);
	cr_assert_eq(ei_x_encode_atom(outer, "outer"), 0);
	int outer_len = outer->index;

	/* A nested user on the same stack must not clobber the outer term. */
	ei_x_buff *inner = scratch_get(&s, &spare_inner);
	cr_assert_eq(inner, &spare_inner);
	cr_assert_eq(inner->index, 0);
	for (int k = 0; k < 100; k++)
		cr_assert_eq(ei_x_encode_atom(inner, "inner_inner_inner"), 0);
	scratch_put(&s, inner); /* frees the spare, leaves the scratch taken */
	cr_assert(s.busy);
	cr_assert_eq(outer->index, outer_len);
	int i = 0;
	char atom[MAXATOMLEN_UTF8];
	cr_assert_eq(ei_decode_atom(outer->buff, &i, atom), 0);
	cr_assert_str_eq(atom, "outer");

	scratch_put(&s, outer);
	cr_assert_not(s.busy);
	scratch_free(&s);
}

Test(scratch, a_big_term_is_not_kept)
{
	struct scratch s;
	scratch_init(&s);
	ei_x_buff spare;
	ei_x_buff *x = scratch_get(&s, &spare);
	char *big = calloc(1, 3 * SCRATCH_KEEP_MAX);
	cr_assert_not_null(big);
	cr_assert_eq(ei_x_encode_binary(x, big, 3 * SCRATCH_KEEP_MAX), 0);
	cr_assert_gt(x->buffsz, SCRATCH_KEEP_MAX);
	scratch_put(&s, x);
	cr_assert_null(s.x.buff, "memory above SCRATCH_KEEP_MAX is released");
	cr_assert_eq(s.x.buffsz, 0);

	x = scratch_get(&s, &spare);
	cr_assert_eq(x, &s.x, "and allocated again at the initial size");
	cr_assert_eq(x->buffsz, SCRATCH_INITIAL);
	scratch_put(&s, x);

	/* Growth up to the limit is kept. */
	x = scratch_get(&s, &spare);
	cr_assert_eq(ei_x_encode_binary(x, big, SCRATCH_KEEP_MAX / 2), 0);
	char *grown = x->buff;
	scratch_put(&s, x);
	cr_assert_eq(s.x.buff, grown);
	free(big);
	scratch_free(&s);
}
