/*
 * replica_acks.h — how far a shard's writes are acknowledged, on its home
 * (docs/architecture.md, "Replicated state"): the home sends each of its
 * store's commits (numbered by the store's sequence) to every replica of
 * the shard, and a write's reply may leave only once the home has
 * committed it and every replica that counts has acknowledged its own
 * commit of it. This tracks the replicas' acknowledgements and says how
 * far that goes, and how many commits may be out unacknowledged (flow
 * control: a slow replica holds the home back, bounded). Pure: no I/O.
 *
 * A replica still being filled does not count (replica_sets.h): its acks
 * are kept, but the durable point waits only for complete ones. With no
 * complete replica (state_replicas = 0, or all lost) the home's own
 * commit is enough.
 */
#ifndef SN_REPLICA_ACKS_H
#define SN_REPLICA_ACKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sharding/replica_sets.h"

struct replica_acks {
	int32_t region[REPLICA_SETS_MAX]; /* -1: none */
	bool counts[REPLICA_SETS_MAX];    /* complete: its ack is waited for */
	uint64_t acked[REPLICA_SETS_MAX]; /* the highest commit it acknowledged */
	uint8_t n;
	uint64_t epoch; /* of the set these replicas belong to */
};

/* The replicas of `set` (its epoch), each with nothing acknowledged yet
 * past `from` (the commit from which they hold everything: the last one
 * their filling streamed, or the shard's last commit for a set that was
 * complete already). */
void replica_acks_init(struct replica_acks *a, const struct replica_set *set, uint64_t from);

/* `region` acknowledged every commit up to `upto` under `epoch`. An ack of
 * another epoch, from a region that is not a replica, or going backwards
 * changes nothing. Returns true if it moved the replica's point. */
bool replica_acks_on_ack(struct replica_acks *a, int32_t region, uint64_t epoch, uint64_t upto);

/* How far writes are acknowledged: the smaller of `home_committed` and
 * every counting replica's point. */
uint64_t replica_acks_durable_upto(const struct replica_acks *a, uint64_t home_committed);

/* Whether commit `next` may be sent now: at most `window` commits past
 * the slowest counting replica's point (a filling replica is streamed to
 * by the filling, not held to this). */
bool replica_acks_may_send(const struct replica_acks *a, uint64_t next, uint64_t window);

#endif
