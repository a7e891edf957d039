/*
 * test_node_set.c — node names (node_name.h) and sets of them (node_set.h):
 * the name rules at every boundary, and the set's add, remove, assign and
 * failure atomicity.
 */
#include <errno.h>
#include <string.h>

#include <criterion/criterion.h>

#include "protocol/node_name.h"
#include "protocol/node_set.h"
#include "unit_helpers.h"

Test(node_name, rules)
{
	cr_assert(node_name_valid("a@b", 3));
	cr_assert(node_name_valid("shardnode@127.0.0.1", 19));
	cr_assert(node_name_valid("x@h\x7e", 4));
	/* Only `len` bytes count: the rest of the string is not looked at. */
	cr_assert(node_name_valid("a@b@c", 3));

	cr_assert_not(node_name_valid("", 0), "empty");
	cr_assert_not(node_name_valid("nohost", 6), "no '@'");
	cr_assert_not(node_name_valid("a@b@c", 5), "two '@'");
	cr_assert_not(node_name_valid("a@@b", 4), "two '@' side by side");
	cr_assert_not(node_name_valid("@host", 5), "empty alive part");
	cr_assert_not(node_name_valid("alive@", 6), "empty host part");
	cr_assert_not(node_name_valid("@", 1));
	cr_assert_not(node_name_valid("a\x01@b", 4), "control byte");
	cr_assert_not(node_name_valid("a@b\x1f", 4), "control byte");
	cr_assert_not(node_name_valid("a@b\x7f", 4), "DEL");
	cr_assert_not(node_name_valid("a\0@b", 4), "NUL");

	char name[NODE_NAME_BUF + 1];
	memset(name, 'n', sizeof name);
	name[1] = '@';
	cr_assert(node_name_valid(name, NODE_NAME_BUF - 1), "longest name");
	cr_assert_not(node_name_valid(name, NODE_NAME_BUF), "too long");
	cr_assert_not(node_name_valid(name, NODE_NAME_BUF + 1), "too long");
}

/* A name of exactly `len` bytes ("n@hhhh..."), in buf. */
static const char *name_of_len(char *buf, size_t len)
{
	memset(buf, 'h', len);
	buf[0] = 'n';
	buf[1] = '@';
	buf[len] = '\0';
	return buf;
}

Test(node_set, starts_empty_and_frees_twice)
{
	struct node_set s;
	node_set_init(&s);
	cr_assert_eq(node_set_count(&s), 0);
	cr_assert_not(node_set_contains(&s, "a@h"));
	cr_assert_not(node_set_remove(&s, "a@h"));
	node_set_free(&s);
	node_set_free(&s);
	struct node_set z = {0};
	cr_assert_eq(node_set_add(&z, "a@h"), 1, "a zeroed set is an empty set");
	node_set_free(&z);
}

Test(node_set, add_keeps_order_and_refuses_duplicates)
{
	struct node_set s;
	node_set_init(&s);
	const char *names[] = {"c@h", "a@h", "b@h"};
	for (size_t k = 0; k < 3; k++)
		cr_assert_eq(node_set_add(&s, names[k]), 1);
	cr_assert_eq(node_set_add(&s, "a@h"), 0, "already there");
	cr_assert_eq(node_set_count(&s), 3);
	for (size_t k = 0; k < 3; k++)
		cr_assert_str_eq(node_set_at(&s, k), names[k], "insertion order");
	cr_assert(node_set_contains(&s, "b@h"));
	cr_assert_not(node_set_contains(&s, "b@"), "whole names only");
	cr_assert_not(node_set_contains(&s, "b@hh"));
	node_set_free(&s);
}

Test(node_set, grows_past_its_first_block)
{
	struct node_set s;
	node_set_init(&s);
	char buf[32];
	for (unsigned k = 0; k < 300; k++) {
		snprintf(buf, sizeof buf, "n%u@h", k);
		cr_assert_eq(node_set_add(&s, buf), 1);
	}
	cr_assert_eq(node_set_count(&s), 300);
	for (unsigned k = 0; k < 300; k++) {
		snprintf(buf, sizeof buf, "n%u@h", k);
		cr_assert(node_set_contains(&s, buf));
		cr_assert_str_eq(node_set_at(&s, k), buf);
	}
	node_set_free(&s);
}

Test(node_set, longest_name_fits_and_one_more_byte_is_refused)
{
	struct node_set s;
	node_set_init(&s);
	char longest[NODE_NAME_BUF + 1];
	cr_assert_eq(node_set_add(&s, name_of_len(longest, NODE_NAME_BUF - 1)), 1);
	cr_assert_str_eq(node_set_at(&s, 0), longest);
	char too_long[NODE_NAME_BUF + 1];
	cr_assert_eq(node_set_add(&s, name_of_len(too_long, NODE_NAME_BUF)), -ENAMETOOLONG);
	cr_assert_eq(node_set_count(&s), 1, "unchanged on error");
	node_set_free(&s);
}

Test(node_set, remove_keeps_the_order_of_the_others)
{
	struct node_set s;
	node_set_init(&s);
	const char *names[] = {"a@h", "b@h", "c@h", "d@h"};
	for (size_t k = 0; k < 4; k++)
		node_set_add(&s, names[k]);
	cr_assert(node_set_remove(&s, "b@h"));
	cr_assert_not(node_set_remove(&s, "b@h"), "removed once");
	cr_assert_eq(node_set_count(&s), 3);
	cr_assert_str_eq(node_set_at(&s, 0), "a@h");
	cr_assert_str_eq(node_set_at(&s, 1), "c@h");
	cr_assert_str_eq(node_set_at(&s, 2), "d@h");
	cr_assert(node_set_remove(&s, "d@h"), "the last one");
	cr_assert(node_set_remove(&s, "a@h"), "the first one");
	cr_assert_eq(node_set_count(&s), 1);
	cr_assert_str_eq(node_set_at(&s, 0), "c@h");
	node_set_clear(&s);
	cr_assert_eq(node_set_count(&s), 0);
	cr_assert_not(node_set_contains(&s, "c@h"));
	node_set_free(&s);
}

Test(node_set, assign_replaces_drops_duplicates_and_is_atomic)
{
	struct node_set s;
	node_set_init(&s);
	node_set_add(&s, "old@h");
	const char *names[] = {"a@h", "b@h", "a@h"};
	cr_assert_eq(node_set_assign(&s, names, 3), 0);
	cr_assert_eq(node_set_count(&s), 2, "the duplicate dropped");
	cr_assert_not(node_set_contains(&s, "old@h"), "replaced, not added to");
	cr_assert_str_eq(node_set_at(&s, 0), "a@h");
	cr_assert_str_eq(node_set_at(&s, 1), "b@h");

	char too_long[NODE_NAME_BUF + 1];
	const char *bad[] = {"x@h", name_of_len(too_long, NODE_NAME_BUF)};
	cr_assert_eq(node_set_assign(&s, bad, 2), -ENAMETOOLONG);
	cr_assert_eq(node_set_count(&s), 2, "the old contents kept");
	cr_assert(node_set_contains(&s, "a@h"));
	cr_assert_not(node_set_contains(&s, "x@h"));

	cr_assert_eq(node_set_assign(&s, NULL, 0), 0);
	cr_assert_eq(node_set_count(&s), 0, "assigning nothing empties it");
	node_set_free(&s);
}
