/*
 * region_remote_host.h — a type written in Erlang or Elixir and the state
 * of its host (region_remote_host.c): ending a leaving shard's processes,
 * the host's nodedown, and the coordinator told while the host is down.
 * For the files of a region only (region_internal.h says which may call
 * which); other modules use region.h.
 */
#ifndef SN_REGION_REMOTE_HOST_H
#define SN_REGION_REMOTE_HOST_H

#include "sharding/region_internal.h"
#include "sharding/region_remote.h"

/* Whether the region's entities run on a host that has not answered or
 * is down: nothing can be delivered to them here now. */
static inline bool region_remote_host_down(const struct region *r)
{
	return region_remote_active(r) && !r->cfg.host->ready(r->cfg.host->arg);
}

/* The shard left and its entities are about to be freed: their processes
 * are ended through the host's dispatcher, which confirms once they have
 * all ended. Returns true if that confirmation is awaited: the hub's
 * shard_stopped goes when it comes (region_remote_handle), when the host
 * goes down (region_remote_on_nodedown) or after handoff_timeout_ms
 * (region_remote_tick), whichever is first. False: no process to wait
 * for. */
bool region_remote_end_processes(struct region *r, uint32_t shard);

/* A node went down. If it is the host, every process of the type's
 * entities ended with the connection: a message one was handling is
 * answered {error, {entity_crashed, noconnection}} (it may or may not
 * have been handled, as with any crash), the messages queued behind go
 * back to the front of their slot's buffer to wait for the host or follow
 * the shard, the states last completed stay; and the shards waiting for
 * their processes to end wait no more. Returns true if `peer` was the
 * host: hand-offs that waited for those processes may go on now. */
bool region_remote_on_nodedown(struct region *r, const char *peer);

/* Tells the coordinator what the host's state means for this region's
 * shards, when that changed: while the host is down, region_leaving (the
 * shards move to members whose host is up; the region stays and routes);
 * once it is back, region_back (it takes shards again). Called on every
 * registration (`registered_anew`: a coordinator that knows nothing of
 * it), on the retry tick and when the host answers or goes down. Nothing
 * for a region without a host, a proxy, or one shutting down. */
void region_remote_check_host(struct region *r, bool registered_anew);

/* The retry timer: a confirmation that did not come within
 * handoff_timeout_ms is waited for no more. */
void region_remote_tick(struct region *r);

#endif
