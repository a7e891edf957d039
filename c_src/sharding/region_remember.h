/*
 * region_remember.h — a region's remembered entities (region_remember.c). For the files of a region only
 * (region_internal.h says which may call which); other modules use
 * region.h.
 */
#ifndef SN_REGION_REMEMBER_H
#define SN_REGION_REMEMBER_H

#include "sharding/region_internal.h"

/* With cfg.remember, creates the replica (r->pid must be set). Returns 0
 * (also without remember), -EINVAL (remember without members_hosting), or
 * -ENOMEM. */
int region_remember_start(struct region *r);

/* Offers a received term, which came from node `via`, to the replica.
 * Returns true if it was a `remembered` message (handled, or malformed or
 * not from the member it names, and logged). */
bool region_remember_handle(struct region *r, const char *term, size_t len, const char *via);

/* A shard that just came here: its entities are watched and the ones
 * remembered for it started, or, without a quorum lease, started by
 * region_remember_resume. `s` is hosted by r. */
void region_start_remembered(struct region *r, struct shard *s);

/* Whether `shard` has remembered entities this region would host, so it
 * wants a home without waiting for a message. */
bool region_remember_wants_home(const struct region *r, uint32_t shard);

/* With a lease again: starts the remembered entities that waited for it. */
void region_remember_resume(struct region *r);

#endif
