/*
 * test_reachability.c — the cluster-wide reachability table: one record
 * per observer, the higher version wins, and its wire form
 * [{Observer, Version, [Subject]}] round-trips and refuses bad shapes.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include <criterion/criterion.h>

#include "cluster/reachability.h"
#include "etf/term.h"
#include "etf/term_validate.h"
#include "unit_helpers.h"

Test(reachability, the_higher_version_wins)
{
	struct reachability r = {0};
	const char *s1[] = {"b@h", "c@h"};
	cr_assert_eq(reachability_update(&r, "a@h", 10, s1, 2), 1, "a new record is a change");
	cr_assert(reachability_has(&r, "a@h", "b@h"));
	cr_assert(reachability_has(&r, "a@h", "c@h"));
	cr_assert(!reachability_has(&r, "b@h", "a@h"));
	const char *s2[] = {"c@h"};
	cr_assert_eq(reachability_update(&r, "a@h", 9, s2, 1), 0, "an older version is ignored");
	cr_assert_eq(reachability_update(&r, "a@h", 10, s2, 1), 0, "so is an equal one");
	cr_assert(reachability_has(&r, "a@h", "b@h"));
	const char *s1_reordered[] = {"c@h", "b@h"};
	cr_assert_eq(reachability_update(&r, "a@h", 11, s1_reordered, 2), 0, "the same set is no change");
	cr_assert_eq(reachability_find(&r, "a@h")->version, 11, "but its version is kept");
	cr_assert_eq(reachability_update(&r, "a@h", 12, s2, 1), 1);
	cr_assert(!reachability_has(&r, "a@h", "b@h"));
	cr_assert_eq(reachability_update(&r, "a@h", 13, NULL, 0), 1, "everyone heard again");
	cr_assert_eq(reachability_find(&r, "a@h")->nsubjects, 0);
	reachability_free(&r);
	cr_assert_eq(r.n, 0);
}

Test(reachability, a_subject_listed_twice_is_kept_once)
{
	struct reachability r = {0};
	const char *s[] = {"b@h", "b@h", "c@h"};
	cr_assert_eq(reachability_update(&r, "a@h", 1, s, 3), 1);
	cr_assert_eq(reachability_find(&r, "a@h")->nsubjects, 2);
	reachability_free(&r);
}

Test(reachability, names_too_long_are_refused)
{
	struct reachability r = {0};
	char longname[REACH_NAME_MAX + 1];
	memset(longname, 'x', sizeof longname - 1);
	longname[sizeof longname - 1] = '\0';
	const char *s[] = {longname};
	cr_assert_eq(reachability_update(&r, longname, 1, NULL, 0), -EINVAL);
	cr_assert_eq(reachability_update(&r, "a@h", 1, s, 1), -EINVAL);
	cr_assert_eq(r.n, 0, "nothing was kept");
	reachability_free(&r);
}

Test(reachability, versions_outrun_the_clock_and_survive_restarts)
{
	cr_assert_eq(reachability_next_version(0, 1000), 1000);
	cr_assert_eq(reachability_next_version(1000, 1000), 1001, "two changes in one millisecond");
	cr_assert_eq(reachability_next_version(5000, 1000), 5001, "a clock set back");
	cr_assert_eq(reachability_next_version(UINT64_MAX - 1, 0), UINT64_MAX);
}

/* Encodes r, then merges it into a fresh table through the validator, as a
 * message from a peer would come. */
static void round_trip(const struct reachability *r, struct reachability *into, int expect)
{
	ei_x_buff x;
	sn_x_new(&x);
	cr_assert_eq(reachability_encode(r, &x), 0);
	char *buf = sn_dup_exact(x.buff, (size_t)x.index);
	size_t i = 0;
	cr_assert_eq(term_validate(buf, (size_t)x.index, &i), 0);
	i = 0;
	cr_assert_eq(reachability_merge_encoded(into, buf, &i), expect);
	cr_assert_eq(i, (size_t)x.index, "the whole list was read");
	free(buf);
	ei_x_free(&x);
}

Test(reachability, the_wire_form_round_trips)
{
	struct reachability r = {0}, copy = {0};
	round_trip(&r, &copy, 0);
	const char *s1[] = {"b@h", "c@h"};
	const char *s2[] = {"a@h"};
	reachability_update(&r, "a@h", 1700000000123ULL, s1, 2);
	reachability_update(&r, "b@h", 7, s2, 1);
	reachability_update(&r, "c@h", 8, NULL, 0);
	round_trip(&r, &copy, 3);
	cr_assert_eq(copy.n, 3);
	cr_assert_eq(reachability_find(&copy, "a@h")->version, 1700000000123ULL);
	cr_assert(reachability_has(&copy, "a@h", "c@h"));
	cr_assert(reachability_has(&copy, "b@h", "a@h"));
	cr_assert_eq(reachability_find(&copy, "c@h")->nsubjects, 0);
	round_trip(&r, &copy, 0); /* merging again changes nothing */
	reachability_free(&r);
	reachability_free(&copy);
}

/* One observer's record alone merges as the whole table would merge it. */
Test(reachability, one_record_goes_alone)
{
	struct reachability r = {0}, copy = {0};
	const char *s1[] = {"b@h", "c@h"};
	const char *s2[] = {"a@h"};
	reachability_update(&r, "a@h", 10, s1, 2);
	reachability_update(&r, "b@h", 7, s2, 1);
	const char *observers[] = {"b@h", "a@h", "nobody@h"};
	int changes[] = {1, 1, 0};
	for (size_t k = 0; k < 3; k++) {
		ei_x_buff x;
		sn_x_new(&x);
		cr_assert_eq(reachability_encode_one(&r, observers[k], &x), 0);
		char *buf = sn_dup_exact(x.buff, (size_t)x.index);
		size_t i = 0;
		cr_assert_eq(term_validate(buf, (size_t)x.index, &i), 0);
		i = 0;
		cr_assert_eq(reachability_merge_encoded(&copy, buf, &i), changes[k], "%s", observers[k]);
		cr_assert_eq(i, (size_t)x.index, "the whole list was read");
		free(buf);
		ei_x_free(&x);
		cr_assert_eq(copy.n, k < 2 ? k + 1 : 2, "only %s's record came", observers[k]);
	}
	cr_assert(reachability_has(&copy, "a@h", "c@h"));
	cr_assert(reachability_has(&copy, "b@h", "a@h"));
	cr_assert_eq(reachability_digest(&copy), reachability_digest(&r));
	reachability_free(&r);
	reachability_free(&copy);
}

/* Encodes the term `fmt` (erl syntax, via ei_x_format, which writes the
 * version byte first) and merges it. */
static int merge_text(struct reachability *r, const char *fmt)
{
	ei_x_buff x;
	sn_x_new(&x);
	cr_assert_eq(ei_x_format(&x, fmt), 0, "%s", fmt);
	size_t i = 1;
	int rc = reachability_merge_encoded(r, x.buff, &i);
	ei_x_free(&x);
	return rc;
}

Test(reachability, bad_shapes_are_refused)
{
	static const char *const bad[] = {
		"ok",
		"[{a, 1}]",
		"[{a, 1, [b], x}]",
		"[{\"a\", 1, []}]",
		"[{a, -1, []}]",
		"[{a, 1, [\"b\"]}]",
		"[{a, 1, b}]",
		"[{a, x, []}]",
		"[x]",
	};
	for (size_t k = 0; k < SN_ARRAY_LEN(bad); k++) {
		struct reachability r = {0};
		cr_assert_eq(merge_text(&r, bad[k]), -EPROTO, "%s", bad[k]);
		reachability_free(&r);
	}
	/* Records before a bad one are merged. */
	struct reachability r = {0};
	cr_assert_eq(merge_text(&r, "[{a, 1, [b]}, {c, 2, []}]"), 2, "a good list, for comparison");
	reachability_free(&r);
	cr_assert_eq(merge_text(&r, "[{a, 1, [b]}, {c, 1, [7]}]"), -EPROTO);
	cr_assert(reachability_has(&r, "a", "b"));
	reachability_free(&r);
}

/* The digest a heartbeat carries: the same records in any order give the
 * same digest; a newer version or another subject gives another; an empty
 * table says nothing (0). */
Test(reachability, the_digest_is_the_records_in_any_order)
{
	struct reachability a = {0}, b = {0};
	cr_assert_eq(reachability_digest(&a), 0, "an empty table");
	const char *s1[] = {"n3@h"}, *s2[] = {"n3@h", "n4@h"};
	cr_assert_eq(reachability_update(&a, "n1@h", 10, s1, 1), 1);
	cr_assert_eq(reachability_update(&a, "n2@h", 20, s2, 2), 1);
	cr_assert_eq(reachability_update(&a, "n5@h", 30, NULL, 0), 1, "a new record");
	cr_assert_eq(reachability_update(&b, "n5@h", 30, NULL, 0), 1);
	cr_assert_eq(reachability_update(&b, "n2@h", 20, s2, 2), 1);
	cr_assert_eq(reachability_update(&b, "n1@h", 10, s1, 1), 1);
	uint64_t d = reachability_digest(&a);
	cr_assert_neq(d, 0);
	cr_assert_eq(reachability_digest(&b), d, "the same records, merged in another order");
	cr_assert_eq(reachability_update(&b, "n5@h", 31, NULL, 0), 0, "the same set under a newer version");
	cr_assert_neq(reachability_digest(&b), d, "a newer version is another table");
	cr_assert_eq(reachability_update(&a, "n5@h", 31, s1, 1), 1);
	cr_assert_neq(reachability_digest(&a), reachability_digest(&b), "another subject");
	reachability_free(&a);
	reachability_free(&b);
}

Test(reachability, a_record_lists_exactly_its_subjects_in_any_order)
{
	struct reachability r = {0};
	const char *two[] = {"n3@h", "n4@h"}, *swapped[] = {"n4@h", "n3@h"}, *one[] = {"n3@h"};
	cr_assert_not(reachability_lists_exactly(&r, "n1@h", NULL, 0), "no record");
	cr_assert_eq(reachability_update(&r, "n1@h", 10, two, 2), 1);
	cr_assert(reachability_lists_exactly(&r, "n1@h", swapped, 2));
	cr_assert_not(reachability_lists_exactly(&r, "n1@h", one, 1));
	cr_assert_not(reachability_lists_exactly(&r, "n2@h", two, 2), "another observer's");
	cr_assert_eq(reachability_update(&r, "n2@h", 11, NULL, 0), 1);
	cr_assert(reachability_lists_exactly(&r, "n2@h", NULL, 0), "an empty record");
	reachability_free(&r);
}

Test(reachability, a_member_whose_records_come_and_go_is_named_more_often)
{
	struct reachability r = {0};
	cr_assert_eq(reachability_times_named(&r, "c@h"), 0, "never named");
	/* A lossy c@h: a@h, b@h and d@h lose it and hear it again in turn. */
	const char *c[] = {"c@h"};
	uint64_t version = 1;
	const char *observers[] = {"a@h", "b@h", "d@h"};
	for (size_t k = 0; k < SN_ARRAY_LEN(observers); k++) {
		cr_assert_eq(reachability_update(&r, observers[k], version++, c, 1), 1);
		cr_assert_eq(reachability_update(&r, observers[k], version++, NULL, 0), 1);
	}
	/* Then one pair is left: c@h and d@h cannot hear each other. */
	const char *d[] = {"d@h"};
	cr_assert_eq(reachability_update(&r, "c@h", version++, d, 1), 1);
	cr_assert_eq(reachability_update(&r, "d@h", version++, c, 1), 1);
	cr_assert_eq(reachability_times_named(&r, "c@h"), 5, "subject thrice, then both ways with d@h");
	cr_assert_eq(reachability_times_named(&r, "d@h"), 3, "observer twice, subject once");
	cr_assert_eq(reachability_times_named(&r, "a@h"), 1);
	/* Only a newly listed subject counts: a newer version of the same
	 * set, or a subject dropped, names nobody. */
	cr_assert_eq(reachability_update(&r, "d@h", version++, c, 1), 0);
	cr_assert_eq(reachability_update(&r, "c@h", version++, NULL, 0), 1);
	cr_assert_eq(reachability_times_named(&r, "c@h"), 5);
	/* The history fades: halved, and forgotten at 0. */
	reachability_halve_named(&r);
	cr_assert_eq(reachability_times_named(&r, "c@h"), 2);
	cr_assert_eq(reachability_times_named(&r, "d@h"), 1);
	cr_assert_eq(reachability_times_named(&r, "a@h"), 0);
	cr_assert_eq(r.nnamed, 2, "a@h and b@h forgotten, c@h and d@h kept (d@h at 1)");
	reachability_halve_named(&r);
	reachability_halve_named(&r);
	cr_assert_eq(r.nnamed, 0);
	reachability_free(&r);
	cr_assert_null(r.named);
}
