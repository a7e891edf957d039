/*
 * test_watch_ring.c — the ring of watch_ring.h: every member watched by
 * exactly k others, the same ring whatever order the names come in, and
 * every member watching every other once k reaches n - 1.
 */
#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>

#include "cluster/watch_ring.h"

#define MEMBERS 40

static void names_of(char buf[][32], const char *names[], size_t n, size_t rotate)
{
	for (size_t i = 0; i < n; i++) {
		snprintf(buf[i], sizeof buf[i], "m%zu@h", (i + rotate) % n);
		names[i] = buf[i];
	}
}

Test(watch_ring, each_member_is_watched_by_exactly_k)
{
	char buf[MEMBERS][32];
	const char *names[MEMBERS];
	names_of(buf, names, MEMBERS, 0);
	struct watch_ring r;
	cr_assert_eq(watch_ring_build(&r, names, MEMBERS), 0);
	for (size_t k = 1; k < MEMBERS; k++) {
		for (size_t s = 0; s < MEMBERS; s++) {
			size_t watchers = 0, watched = 0;
			for (size_t o = 0; o < MEMBERS; o++) {
				watchers += watch_ring_watches(&r, o, s, k);
				watched += watch_ring_watches(&r, s, o, k);
			}
			cr_assert_eq(watchers, k, "k %zu: member %zu has %zu watchers", k, s, watchers);
			cr_assert_eq(watched, k, "k %zu: member %zu watches %zu", k, s, watched);
			cr_assert(!watch_ring_watches(&r, s, s, k), "nobody watches itself");
		}
	}
	/* The members after one, in turn, are the ones it watches. */
	for (size_t i = 0; i < MEMBERS; i++) {
		cr_assert_eq(watch_ring_after(&r, i, 0), i);
		cr_assert_eq(watch_ring_after(&r, i, MEMBERS), i);
		for (size_t d = 1; d <= 5; d++)
			cr_assert(watch_ring_watches(&r, i, watch_ring_after(&r, i, d), 5));
		cr_assert(!watch_ring_watches(&r, i, watch_ring_after(&r, i, 6), 5));
	}
	watch_ring_free(&r);
}

Test(watch_ring, the_ring_does_not_depend_on_the_order_of_the_list)
{
	char a[MEMBERS][32], b[MEMBERS][32];
	const char *na[MEMBERS], *nb[MEMBERS];
	names_of(a, na, MEMBERS, 0);
	names_of(b, nb, MEMBERS, 17); /* the same names, another order */
	struct watch_ring ra, rb;
	cr_assert_eq(watch_ring_build(&ra, na, MEMBERS), 0);
	cr_assert_eq(watch_ring_build(&rb, nb, MEMBERS), 0);
	for (size_t i = 0; i < MEMBERS; i++) {
		size_t next_a = watch_ring_after(&ra, i, 1);
		size_t j = (i + MEMBERS - 17) % MEMBERS; /* the same name in b */
		size_t next_b = watch_ring_after(&rb, j, 1);
		cr_assert_str_eq(na[next_a], nb[next_b], "after %s", na[i]);
	}
	/* Not the order of the names: neighbours by name are rarely
	 * neighbours on the ring. */
	size_t by_name = 0;
	for (size_t i = 0; i + 1 < MEMBERS; i++)
		by_name += watch_ring_after(&ra, i, 1) == i + 1;
	cr_assert_lt(by_name, MEMBERS / 4);
	watch_ring_free(&ra);
	watch_ring_free(&rb);
}

Test(watch_ring, small_rings_and_everyone)
{
	const char *one[] = {"a@h"};
	struct watch_ring r;
	cr_assert_eq(watch_ring_build(&r, one, 1), 0);
	cr_assert(!watch_ring_watches(&r, 0, 0, 5));
	cr_assert_eq(watch_ring_after(&r, 0, 3), 0);
	watch_ring_free(&r);
	cr_assert_eq(watch_ring_build(&r, NULL, 0), 0);
	watch_ring_free(&r);
	cr_assert(watch_ring_everyone(0, 0));
	cr_assert(watch_ring_everyone(5, 4));
	cr_assert(watch_ring_everyone(5, 9));
	cr_assert(!watch_ring_everyone(6, 4));
	cr_assert(!watch_ring_everyone(2, 0));
}
