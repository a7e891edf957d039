/*
 * test_coordinator_replicas.c — the coordinator's replica sets, the parts
 * that decide without sending: which shard a planned move takes (one its
 * destination keeps a complete copy of), and what the metrics count
 * (replicas missing, shards waiting). The sending parts are tested with
 * real nodes (test/shardnode_replicas_SUITE.erl).
 */
#include <criterion/criterion.h>

#include "coordinator/coordinator_replicas.h"

#define NSHARDS 6

/* Sets known (as after a rebuild), shards homed round robin on regions 0
 * and 1, none moving. */
static void init(struct coordinator_replicas *cr, int32_t home[NSHARDS], int32_t moving[NSHARDS])
{
	cr_assert_eq(coordinator_replicas_init(cr, NSHARDS, 1), 0);
	cr->ready = true;
	for (uint32_t s = 0; s < NSHARDS; s++) {
		home[s] = (int32_t)(s % 2);
		moving[s] = -1;
		cr->sets[s].home = home[s];
		cr->sets[s].epoch = 1;
	}
}

static void replica(struct coordinator_replicas *cr, uint32_t shard, int32_t region, bool complete)
{
	struct replica_set *s = &cr->sets[shard];
	s->replica[s->nreplicas] = region;
	s->complete[s->nreplicas++] = complete;
}

Test(coordinator_replicas, a_move_takes_a_shard_its_destination_keeps_a_copy_of)
{
	struct coordinator_replicas cr;
	int32_t home[NSHARDS], moving[NSHARDS];
	init(&cr, home, moving);
	/* Region 0 homes 0, 2, 4; region 2 keeps a complete copy of 4 only,
	 * and one being filled of 2. */
	replica(&cr, 2, 2, false);
	replica(&cr, 4, 2, true);
	cr_assert_eq(coordinator_replicas_prefer(&cr, 0, 2, home, moving), 4);
	cr_assert_eq(coordinator_replicas_prefer(&cr, 4, 2, home, moving), 4, "already one");
	moving[4] = 3;
	cr_assert_eq(coordinator_replicas_prefer(&cr, 0, 2, home, moving), 0, "not one already moving");
	moving[4] = -1;
	cr_assert_eq(coordinator_replicas_prefer(&cr, 1, 2, home, moving), 1, "only a shard of the same home");
	cr_assert_eq(coordinator_replicas_prefer(&cr, 0, 3, home, moving), 0, "no copy there: as chosen");
	coordinator_replicas_free(&cr);
}

Test(coordinator_replicas, without_replicas_a_move_is_as_chosen)
{
	struct coordinator_replicas cr;
	int32_t home[NSHARDS] = {0}, moving[NSHARDS] = {-1, -1, -1, -1, -1, -1};
	cr_assert_eq(coordinator_replicas_init(&cr, NSHARDS, 0), 0);
	cr_assert_not(coordinator_replicas_on(&cr));
	cr_assert_eq(coordinator_replicas_prefer(&cr, 3, 1, home, moving), 3);
	uint32_t missing, waiting;
	coordinator_replicas_count(&cr, &missing, &waiting);
	cr_assert_eq(missing + waiting, 0);
	coordinator_replicas_free(&cr);
}

Test(coordinator_replicas, the_metrics_count_missing_copies_and_waiting_shards)
{
	struct coordinator_replicas cr;
	int32_t home[NSHARDS], moving[NSHARDS];
	init(&cr, home, moving);
	uint32_t missing, waiting;
	coordinator_replicas_count(&cr, &missing, &waiting);
	cr_assert_eq(missing, NSHARDS, "one wanted for each, none there");
	replica(&cr, 0, 2, true);
	replica(&cr, 1, 2, false); /* being filled: still missing */
	cr.sets[5].waiting = true;
	cr.sets[5].home = -1;
	coordinator_replicas_count(&cr, &missing, &waiting);
	cr_assert_eq(missing, NSHARDS - 2, "the complete one counts; a waiting shard is counted apart");
	cr_assert_eq(waiting, 1);
	cr.ready = false;
	coordinator_replicas_count(&cr, &missing, &waiting);
	cr_assert_eq(missing + waiting, 0, "nothing before the sets are known");
	coordinator_replicas_free(&cr);
}
