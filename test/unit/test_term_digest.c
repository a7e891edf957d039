/*
 * test_term_digest.c — the order-free digest of a collection of terms:
 * the same elements in any order give the same digest, another element
 * another, none 0 and a failed encoding 0; its parts, kept and combined by
 * the caller, the same digest; a list as it came, its collection's.
 */
#include <errno.h>
#include <stdint.h>

#include <criterion/criterion.h>
#include <ei.h>

#include "etf/term_digest.h"

static int encode_long(const void *collection, size_t k, ei_x_buff *x)
{
	return ei_x_encode_long(x, ((const long *)collection)[k]) < 0 ? -ENOMEM : 0;
}

static int encode_fails_at_two(const void *collection, size_t k, ei_x_buff *x)
{
	return k == 2 ? -ENOMEM : encode_long(collection, k, x);
}

Test(term_digest, the_same_elements_in_any_order)
{
	const long a[] = {1, 2, 300000, -7}, b[] = {-7, 300000, 1, 2}, c[] = {1, 2, 300001, -7};
	uint64_t d = term_digest(a, 4, encode_long);
	cr_assert_neq(d, 0);
	cr_assert_eq(term_digest(b, 4, encode_long), d);
	cr_assert_neq(term_digest(c, 4, encode_long), d);
	cr_assert_neq(term_digest(a, 3, encode_long), d, "one element fewer");
}

Test(term_digest, none_or_a_failed_encoding_is_zero_and_a_cancelled_xor_is_not)
{
	const long a[] = {5, 5, 6};
	cr_assert_eq(term_digest(a, 0, encode_long), 0);
	cr_assert_eq(term_digest(a, 3, encode_fails_at_two), 0);
	cr_assert_neq(term_digest(a, 2, encode_long), 0, "two equal elements cancel, yet the digest says something");
}

Test(term_digest, its_parts_give_the_same_digest)
{
	const long a[] = {1, 2, 300000, -7, 2};
	ei_x_buff x;
	cr_assert_eq(ei_x_new(&x), 0);
	uint64_t xor = 0;
	for (size_t k = 0; k < 5; k++) {
		uint64_t part = 0;
		cr_assert_eq(term_digest_part(a, k, encode_long, &x, &part), 0);
		xor ^= part;
	}
	cr_assert_eq(term_digest_of_parts(xor, 5), term_digest(a, 5, encode_long));
	uint64_t part = 0;
	cr_assert_eq(term_digest_part(a, 2, encode_fails_at_two, &x, &part), -ENOMEM);
	cr_assert_eq(term_digest_of_parts(0, 0), 0);
	cr_assert_eq(term_digest_of_parts(0, 2), 1, "cancelled: still says something");
	ei_x_free(&x);
}

/* Elements that came encoded in a list digest as the sender's collection
 * does; what is no list, or an empty one, says nothing. */
Test(term_digest, a_list_as_it_came_digests_as_its_collection)
{
	const long a[] = {1, 2, 300000, -7}, b[] = {-7, 300000, 1, 2};
	ei_x_buff x;
	cr_assert_eq(ei_x_new(&x), 0);
	cr_assert_eq(ei_x_encode_list_header(&x, 4), 0);
	for (size_t k = 0; k < 4; k++)
		cr_assert_eq(encode_long(a, k, &x), 0);
	cr_assert_eq(ei_x_encode_empty_list(&x), 0);
	cr_assert_eq(term_digest_of_list(x.buff, 0), term_digest(a, 4, encode_long));
	cr_assert_eq(term_digest_of_list(x.buff, 0), term_digest(b, 4, encode_long), "order does not count");
	cr_assert_neq(term_digest_of_list(x.buff, 0), term_digest(a, 3, encode_long));
	x.index = 0;
	cr_assert_eq(ei_x_encode_empty_list(&x), 0);
	cr_assert_eq(term_digest_of_list(x.buff, 0), 0);
	x.index = 0;
	cr_assert_eq(ei_x_encode_atom(&x, "gossip"), 0);
	cr_assert_eq(term_digest_of_list(x.buff, 0), 0);
	ei_x_free(&x);
}
