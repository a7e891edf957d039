/*
 * test_byte_set.c — a set of byte strings: what is added is found, what
 * is not is not (empty keys, keys that differ in one byte or in length,
 * zero bytes inside), through many growths; clearing empties it and it
 * can be used again.
 */
#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>

#include "base/byte_set.h"

Test(byte_set, an_empty_set_has_nothing)
{
	struct byte_set s;
	byte_set_init(&s);
	cr_assert(!byte_set_contains(&s, "a", 1));
	cr_assert(!byte_set_contains(&s, "", 0));
	byte_set_clear(&s);
}

Test(byte_set, what_is_added_is_found_and_nothing_else)
{
	struct byte_set s;
	byte_set_init(&s);
	cr_assert_eq(byte_set_add(&s, "abc", 3), 0);
	cr_assert_eq(byte_set_add(&s, "", 0), 0);
	cr_assert_eq(byte_set_add(&s, "a\0c", 3), 0);
	cr_assert_eq(byte_set_add(&s, "abc", 3), 0); /* again: no change */
	cr_assert_eq(s.count, 3);
	cr_assert(byte_set_contains(&s, "abc", 3));
	cr_assert(byte_set_contains(&s, "", 0));
	cr_assert(byte_set_contains(&s, "a\0c", 3));
	cr_assert(!byte_set_contains(&s, "abd", 3));
	cr_assert(!byte_set_contains(&s, "ab", 2));
	cr_assert(!byte_set_contains(&s, "abcd", 4));
	cr_assert(!byte_set_contains(&s, "a\0d", 3));
	byte_set_clear(&s);
	cr_assert(!byte_set_contains(&s, "abc", 3));
	cr_assert_eq(byte_set_add(&s, "x", 1), 0); /* usable again */
	cr_assert(byte_set_contains(&s, "x", 1));
	byte_set_clear(&s);
}

Test(byte_set, many_keys_through_growth)
{
	struct byte_set s;
	byte_set_init(&s);
	char key[32];
	for (int k = 0; k < 5000; k++) {
		int n = snprintf(key, sizeof key, "id-%d", k);
		cr_assert_eq(byte_set_add(&s, key, (size_t)n), 0);
	}
	cr_assert_eq(s.count, 5000);
	cr_assert_leq(s.count * 2, s.cap, "at most half full");
	for (int k = 0; k < 10000; k++) {
		int n = snprintf(key, sizeof key, "id-%d", k);
		cr_assert_eq(byte_set_contains(&s, key, (size_t)n), k < 5000, "key %d", k);
	}
	byte_set_clear(&s);
}
