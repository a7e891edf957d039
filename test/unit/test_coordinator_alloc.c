/*
 * test_coordinator_alloc.c — the default allocation strategy: the region
 * with the fewest shards, ties to the earliest registered.
 */
#include <stddef.h>
#include <stdint.h>

#include <criterion/criterion.h>

#include "coordinator/coordinator.h"
#include "unit_helpers.h"

Test(coordinator_alloc, no_regions)
{
	uint32_t counts[1] = {0};
	cr_assert_eq(coordinator_least_shards(counts, 0, NULL), -1);
	cr_assert_eq(coordinator_least_shards(NULL, 0, NULL), -1, "counts is not read when there are none");
}

Test(coordinator_alloc, one_region)
{
	uint32_t counts[] = {12345};
	cr_assert_eq(coordinator_least_shards(counts, 1, NULL), 0);
	counts[0] = UINT32_MAX;
	cr_assert_eq(coordinator_least_shards(counts, 1, NULL), 0);
}

Test(coordinator_alloc, picks_the_minimum)
{
	uint32_t a[] = {5, 3, 9, 4};
	cr_assert_eq(coordinator_least_shards(a, SN_ARRAY_LEN(a), NULL), 1);
	uint32_t b[] = {5, 6, 7, 0};
	cr_assert_eq(coordinator_least_shards(b, SN_ARRAY_LEN(b), NULL), 3, "the last one");
	uint32_t c[] = {0, 6, 7, 8};
	cr_assert_eq(coordinator_least_shards(c, SN_ARRAY_LEN(c), NULL), 0, "the first one");
	uint32_t d[] = {UINT32_MAX, UINT32_MAX - 1, UINT32_MAX};
	cr_assert_eq(coordinator_least_shards(d, SN_ARRAY_LEN(d), NULL), 1, "large counts compare unsigned");
	uint32_t e[] = {(uint32_t)INT32_MAX + 1, 7};
	cr_assert_eq(coordinator_least_shards(e, SN_ARRAY_LEN(e), NULL), 1);
	int arg = 0;
	cr_assert_eq(coordinator_least_shards(a, SN_ARRAY_LEN(a), &arg), 1, "arg is ignored");
}

Test(coordinator_alloc, ties_go_to_the_lowest_index)
{
	uint32_t a[] = {2, 2, 2, 2};
	cr_assert_eq(coordinator_least_shards(a, SN_ARRAY_LEN(a), NULL), 0);
	uint32_t b[] = {4, 1, 3, 1, 1};
	cr_assert_eq(coordinator_least_shards(b, SN_ARRAY_LEN(b), NULL), 1);
	uint32_t c[] = {9, 9, 0, 5, 0};
	cr_assert_eq(coordinator_least_shards(c, SN_ARRAY_LEN(c), NULL), 2);
}

Test(coordinator_alloc, spreads_shards_evenly)
{
	/* Allocating 1000 shards one at a time over 7 regions that start
	 * uneven: the counts end within one of each other once caught up, and
	 * each pick is the lowest index among the least loaded. */
	uint32_t counts[7] = {10, 0, 3, 0, 25, 1, 0};
	for (int s = 0; s < 1000; s++) {
		int pick = coordinator_least_shards(counts, 7, NULL);
		cr_assert(pick >= 0 && pick < 7);
		for (int k = 0; k < 7; k++) {
			cr_assert_geq(counts[k], counts[pick]);
			if (k < pick)
				cr_assert_gt(counts[k], counts[pick], "tie not given to region %d", k);
		}
		counts[pick]++;
	}
	uint32_t lo = UINT32_MAX, hi = 0;
	for (int k = 0; k < 7; k++) {
		lo = counts[k] < lo ? counts[k] : lo;
		hi = counts[k] > hi ? counts[k] : hi;
	}
	cr_assert_leq(hi - lo, 1, "counts %u..%u", lo, hi);
}
