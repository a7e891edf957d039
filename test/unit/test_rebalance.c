/*
 * test_rebalance.c — which shards a coordinator moves and where: draining
 * leaving regions, evening out the rest under the threshold and the limit
 * on moves at once, with moves already under way, and giving up on a
 * move. (Where a shard without a home goes is test_coordinator_alloc.c.)
 */
#include <stdbool.h>
#include <stdint.h>

#include <criterion/criterion.h>

#include "coordinator/rebalance.h"
#include "unit_helpers.h"

#define MAXS 128
#define MAXR 8

/* An allocation under construction: every shard without a home, every
 * region taking shards and not draining. */
struct alloc {
	int32_t home[MAXS], moving_to[MAXS];
	bool takes[MAXR], drains[MAXR];
	struct rebalance_state st;
	struct rebalance_move out[MAXS];
	size_t n;
};

static void init(struct alloc *a, uint32_t nshards, size_t nregions)
{
	cr_assert_leq(nshards, MAXS);
	cr_assert_leq(nregions, MAXR);
	for (uint32_t s = 0; s < MAXS; s++)
		a->home[s] = a->moving_to[s] = -1;
	for (size_t r = 0; r < MAXR; r++) {
		a->takes[r] = true;
		a->drains[r] = false;
	}
	a->st = (struct rebalance_state){nshards, a->home, a->moving_to, nregions, a->takes, a->drains};
	a->n = 0;
}

/* Homes `count` shards on `region`, from shard `first` on. */
static void put(struct alloc *a, uint32_t first, uint32_t count, int32_t region)
{
	for (uint32_t s = first; s < first + count; s++)
		a->home[s] = region;
}

static size_t even(struct alloc *a, uint32_t threshold, uint32_t room)
{
	cr_assert_eq(rebalance_even_out(&a->st, threshold, room, a->out, &a->n), 0);
	return a->n;
}

static size_t drain(struct alloc *a)
{
	cr_assert_eq(rebalance_drain(&a->st, a->out, &a->n), 0);
	return a->n;
}

static void assert_move(const struct alloc *a, size_t k, uint32_t shard, size_t from, size_t to)
{
	cr_assert_lt(k, a->n);
	cr_assert(a->out[k].shard == shard && a->out[k].from == from && a->out[k].to == to,
		  "move %zu: shard %u %zu->%zu, expected shard %u %zu->%zu", k, a->out[k].shard, a->out[k].from,
		  a->out[k].to, shard, from, to);
}

/* ---- evening out ---- */

Test(rebalance_even_out, nothing_to_move_without_regions_or_shards)
{
	struct alloc a;
	init(&a, 0, 0);
	cr_assert_eq(even(&a, 0, 10), 0);
	init(&a, 16, 0);
	cr_assert_eq(even(&a, 0, 10), 0, "no region");
	init(&a, 16, 3);
	cr_assert_eq(even(&a, 0, 10), 0, "no shard has a home yet");
	put(&a, 0, 16, 1);
	a.takes[0] = a.takes[2] = false;
	cr_assert_eq(even(&a, 0, 10), 0, "one region takes shards: nowhere to move");
	a.takes[1] = false;
	cr_assert_eq(even(&a, 0, 10), 0, "none does");
}

Test(rebalance_even_out, only_a_difference_above_the_threshold_moves)
{
	struct alloc a;
	init(&a, 4, 2);
	put(&a, 0, 3, 0);
	put(&a, 3, 1, 1);
	cr_assert_eq(even(&a, 2, 10), 0, "3 - 1 is not above 2");
	cr_assert_eq(even(&a, 1, 10), 1, "it is above 1");
	assert_move(&a, 0, 0, 0, 1);
	init(&a, 2, 2);
	put(&a, 0, 2, 0);
	cr_assert_eq(even(&a, 0, 10), 1, "threshold 0: an even split");
	assert_move(&a, 0, 0, 0, 1);
	init(&a, 4, 2);
	put(&a, 0, 4, 0);
	cr_assert_eq(even(&a, UINT32_MAX, 10), 0);
}

Test(rebalance_even_out, at_most_room_moves_and_no_more_than_needed)
{
	struct alloc a;
	init(&a, 6, 2);
	put(&a, 0, 6, 0);
	cr_assert_eq(even(&a, 1, 0), 0, "max_simultaneous_rebalance moves under way already");
	cr_assert_eq(even(&a, 1, 1), 1);
	assert_move(&a, 0, 0, 0, 1);
	cr_assert_eq(even(&a, 1, 2), 2);
	cr_assert_eq(even(&a, 1, 1000), 3, "6/0 to 3/3, then the difference is within the threshold");
	for (size_t k = 0; k < 3; k++)
		assert_move(&a, k, (uint32_t)k, 0, 1);
}

Test(rebalance_even_out, ties_go_to_the_earliest_registered_region)
{
	struct alloc a;
	init(&a, 8, 4);
	put(&a, 0, 4, 0);
	put(&a, 4, 4, 1);
	cr_assert_eq(even(&a, 1, 1000), 4);
	/* 4 4 0 0: the first of the most to the first of the fewest. */
	assert_move(&a, 0, 0, 0, 2); /* 3 4 1 0 */
	assert_move(&a, 1, 4, 1, 3); /* 3 3 1 1 */
	assert_move(&a, 2, 1, 0, 2); /* 2 3 2 1 */
	assert_move(&a, 3, 5, 1, 3); /* 2 2 2 2 */
}

Test(rebalance_even_out, shards_go_lowest_number_first_and_never_twice)
{
	struct alloc a;
	init(&a, 8, 3);
	put(&a, 0, 8, 0);
	a.moving_to[1] = 2; /* under way: counts at region 2 */
	cr_assert_eq(even(&a, 1, 1000), 4);
	assert_move(&a, 0, 0, 0, 1); /* 7 0 1 -> 6 1 1 */
	assert_move(&a, 1, 2, 0, 1); /* shard 1 is moving: 5 2 1 */
	assert_move(&a, 2, 3, 0, 2); /* 4 2 2 */
	assert_move(&a, 3, 4, 0, 1); /* 3 3 2: within the threshold */
}

Test(rebalance_even_out, moves_under_way_count_where_they_go)
{
	struct alloc a;
	init(&a, 6, 2);
	put(&a, 0, 6, 0);
	a.moving_to[0] = a.moving_to[1] = a.moving_to[2] = 1;
	cr_assert_eq(even(&a, 0, 1000), 0, "3 and 3 once the moves are done");
	a.moving_to[2] = -1;
	cr_assert_eq(even(&a, 2, 1000), 0, "4 and 2: within threshold 2");
	cr_assert_eq(even(&a, 1, 1000), 1);
	assert_move(&a, 0, 2, 0, 1); /* shards 0 and 1 are moving already */
}

Test(rebalance_even_out, regions_that_take_no_shards_neither_give_nor_get)
{
	struct alloc a;
	init(&a, 12, 3);
	put(&a, 0, 10, 0);
	put(&a, 10, 2, 1);
	a.takes[0] = false; /* draining, downed, or not an owner yet */
	cr_assert_eq(even(&a, 1, 1000), 1, "region 0's ten are drain's business");
	assert_move(&a, 0, 10, 1, 2);
	init(&a, 12, 3);
	put(&a, 0, 12, 0);
	a.takes[2] = false;
	cr_assert_eq(even(&a, 1, 1000), 6, "to region 1 only");
	for (size_t k = 0; k < 6; k++)
		cr_assert_eq(a.out[k].to, 1);
}

Test(rebalance_even_out, a_most_loaded_region_with_nothing_to_give_stops_the_round)
{
	/* Present behaviour: region 1's four are all moves into it, so it
	 * gives nothing, and region 0's three do not go to region 2 either
	 * until those moves are done. */
	struct alloc a;
	init(&a, 7, 3);
	put(&a, 0, 7, 0);
	for (uint32_t s = 0; s < 4; s++)
		a.moving_to[s] = 1;
	cr_assert_eq(even(&a, 1, 1000), 0);
}

/* ---- draining ---- */

Test(rebalance_drain, a_leaving_regions_shards_all_go_at_once_to_the_fewest)
{
	struct alloc a;
	init(&a, 6, 3);
	a.home[0] = a.home[2] = a.home[3] = a.home[5] = 0;
	a.home[1] = 1;
	a.moving_to[3] = 1; /* under way already */
	/* shard 4 has no home */
	a.drains[0] = true;
	a.takes[0] = false;
	cr_assert_eq(drain(&a), 3);
	/* counts 3 2 0: shard 0 to 2 (1), shard 2 to 2 (2), shard 5: 2 and 2, the first */
	assert_move(&a, 0, 0, 0, 2);
	assert_move(&a, 1, 2, 0, 2);
	assert_move(&a, 2, 5, 0, 1);
}

Test(rebalance_drain, no_limit_on_moves_at_once)
{
	struct alloc a;
	init(&a, 100, 3);
	put(&a, 0, 100, 2);
	a.drains[2] = true;
	a.takes[2] = false;
	cr_assert_eq(drain(&a), 100);
	for (size_t k = 0; k < 100; k++)
		assert_move(&a, k, (uint32_t)k, 2, k % 2);
}

Test(rebalance_drain, nowhere_to_go_moves_nothing)
{
	struct alloc a;
	init(&a, 4, 2);
	put(&a, 0, 2, 0);
	put(&a, 2, 2, 1);
	a.drains[0] = a.drains[1] = true;
	a.takes[0] = a.takes[1] = false;
	cr_assert_eq(drain(&a), 0, "both leaving: neither is the other's target");
	init(&a, 0, 0);
	cr_assert_eq(drain(&a), 0, "no shards, no regions");
}

Test(rebalance_drain, two_leaving_regions_drain_to_the_others_only)
{
	struct alloc a;
	init(&a, 4, 3);
	put(&a, 0, 2, 0);
	put(&a, 2, 2, 2);
	a.drains[0] = a.drains[2] = true;
	a.takes[0] = a.takes[2] = false;
	cr_assert_eq(drain(&a), 4);
	for (size_t k = 0; k < 4; k++)
		cr_assert_eq(a.out[k].to, 1);
}

Test(rebalance_drain, a_region_not_draining_keeps_its_shards)
{
	/* A downed region's shards stay until its lease has run out; the
	 * coordinator does not mark it as draining. */
	struct alloc a;
	init(&a, 4, 2);
	put(&a, 0, 4, 0);
	a.takes[0] = false;
	cr_assert_eq(drain(&a), 0);
}

/* ---- giving up ---- */

Test(rebalance_overdue, only_after_more_than_the_timeout)
{
	cr_assert(!rebalance_overdue(1000, 1000, 1000));
	cr_assert(!rebalance_overdue(1000, 2000, 1000), "exactly the timeout: not yet");
	cr_assert(rebalance_overdue(1000, 2001, 1000));
	cr_assert(!rebalance_overdue(5, 5, 0));
	cr_assert(rebalance_overdue(5, 6, 0));
	cr_assert(rebalance_overdue(0, UINT64_MAX, UINT32_MAX));
}
