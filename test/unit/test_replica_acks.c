/*
 * test_replica_acks.c — how far a shard's writes are acknowledged on its
 * home (replica_acks.h): the home's commit and every complete replica's
 * ack, not a filling replica's; acks of another epoch or from strangers,
 * and acks going backwards, change nothing; the window of commits out.
 */
#include <stdbool.h>
#include <stdint.h>

#include <criterion/criterion.h>

#include "sharding/replica_acks.h"
#include "unit_helpers.h"

/* Home 0, replicas 1 (complete) and 2 (filling) at epoch 7. */
static void two_replicas(struct replica_set *s)
{
	replica_set_init(s);
	s->home = 0;
	s->replica[0] = 1;
	s->complete[0] = true;
	s->replica[1] = 2;
	s->complete[1] = false;
	s->nreplicas = 2;
	s->epoch = 7;
}

Test(replica_acks, durable_up_to_the_home_and_every_complete_replica)
{
	struct replica_set s;
	two_replicas(&s);
	struct replica_acks a;
	replica_acks_init(&a, &s, 10);
	cr_assert_eq(a.n, 2);
	cr_assert_eq(replica_acks_durable_upto(&a, 15), 10, "the replica holds up to 10 so far");
	cr_assert(replica_acks_on_ack(&a, 1, 7, 13));
	cr_assert_eq(replica_acks_durable_upto(&a, 15), 13);
	cr_assert_eq(replica_acks_durable_upto(&a, 12), 12, "never past the home's own commit");
	/* The filling replica's acks are kept but waited for by nobody. */
	cr_assert(replica_acks_on_ack(&a, 2, 7, 11));
	cr_assert_eq(replica_acks_durable_upto(&a, 15), 13);
}

Test(replica_acks, other_epochs_strangers_and_backward_acks_change_nothing)
{
	struct replica_set s;
	two_replicas(&s);
	struct replica_acks a;
	replica_acks_init(&a, &s, 10);
	cr_assert_not(replica_acks_on_ack(&a, 1, 6, 20), "an older epoch's");
	cr_assert_not(replica_acks_on_ack(&a, 1, 8, 20), "a newer epoch this home has not heard of");
	cr_assert_not(replica_acks_on_ack(&a, 3, 7, 20), "not a replica");
	cr_assert_not(replica_acks_on_ack(&a, 0, 7, 20), "the home is no replica");
	cr_assert_eq(replica_acks_durable_upto(&a, 30), 10);
	cr_assert(replica_acks_on_ack(&a, 1, 7, 14));
	cr_assert_not(replica_acks_on_ack(&a, 1, 7, 12), "backwards");
	cr_assert_not(replica_acks_on_ack(&a, 1, 7, 14), "the same again");
	cr_assert_eq(replica_acks_durable_upto(&a, 30), 14);
}

Test(replica_acks, without_a_complete_replica_the_homes_commit_is_enough)
{
	struct replica_set s;
	replica_set_init(&s);
	s.home = 0;
	s.epoch = 3;
	struct replica_acks a;
	replica_acks_init(&a, &s, 0);
	cr_assert_eq(a.n, 0);
	cr_assert_eq(replica_acks_durable_upto(&a, 42), 42);
	cr_assert(replica_acks_may_send(&a, 1000000, 1));
	/* Only a filling one: the same. */
	two_replicas(&s);
	s.complete[0] = false;
	replica_acks_init(&a, &s, 5);
	cr_assert_eq(replica_acks_durable_upto(&a, 42), 42);
}

Test(replica_acks, the_slowest_complete_replica_bounds_what_is_out)
{
	struct replica_set s;
	two_replicas(&s);
	s.complete[1] = true; /* both count */
	struct replica_acks a;
	replica_acks_init(&a, &s, 100);
	cr_assert(replica_acks_may_send(&a, 104, 4));
	cr_assert_not(replica_acks_may_send(&a, 105, 4));
	cr_assert(replica_acks_on_ack(&a, 1, 7, 110));
	cr_assert_not(replica_acks_may_send(&a, 105, 4), "replica 2 is still at 100");
	cr_assert(replica_acks_on_ack(&a, 2, 7, 102));
	cr_assert(replica_acks_may_send(&a, 106, 4));
	cr_assert_eq(replica_acks_durable_upto(&a, 200), 102);
	cr_assert(replica_acks_may_send(&a, 90, 4), "an older commit again (a resend) always may");
}
