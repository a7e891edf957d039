/*
 * region_replica_copy.h — replicated state as a region receives it
 * (region_replica_copy.c): the coordinator's sets, and a replica's side of
 * the home's writes and fills. For the files of a region only
 * (region_internal.h says which may call which).
 */
#ifndef SN_REGION_REPLICA_COPY_H
#define SN_REGION_REPLICA_COPY_H

#include "sharding/region_internal.h"
#include "replication/replica_msg.h"

/* What the hub must do after region_replica_handle. */
enum {
	REPLICA_DO_RECHECK = 1u << 0, /* acknowledgements came, or a set changed: replies may be durable now */
};

/* Handles a decoded replica message sent to the region by `from` (the
 * sender; NULL if unknown): a set (only from the coordinator the region is
 * registered with), a home's writes and fill chunks (applied, acknowledged
 * once committed, refused from a member that is not the newest set's
 * home), a replica's replies. What a slot must do next is left owed on it
 * (SLOT_OWES_REPLICA_CLAIMED, SLOT_OWES_REPLICA_FENCE) for
 * region_step_owed. Returns REPLICA_DO_* bits. */
unsigned region_replica_handle(struct region *r, const struct replica_msg *m, const erlang_pid *from);

/* The store reported its commits up to r->replicas.committed_upto with
 * `status`: the acknowledgements they cover go to the homes (none for a
 * failed commit: its writes are not here). */
void region_replica_copy_on_committed(struct region *r, int status);

/* replicas_held to the coordinator: the copies this region keeps (sent
 * with every registration, after `hosting`, so a new coordinator
 * rebuilds the sets). */
void region_replica_send_report(struct region *r);

/* At the region's start, after its store is open: each shard's part in
 * its last set as the store kept it (written with every change of it), for
 * the replicas_held report until the region hears a set of the shard
 * again. Returns 0 or the store's error. */
int region_replica_restore(struct region *r);

/* Frees every slot's set and the acknowledgements owed. */
void region_replica_free(struct region *r);

#endif
