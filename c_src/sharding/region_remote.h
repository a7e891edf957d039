/*
 * region_remote.h — the messages of a type whose entities run as
 * processes on another node, the host (region_remote.c; docs/
 * architecture.md, "Entities written in Erlang and Elixir"). For the
 * files of a region only (region_internal.h says which may call which);
 * other modules use region.h.
 */
#ifndef SN_REGION_REMOTE_H
#define SN_REGION_REMOTE_H

#include "sharding/region_internal.h"

/* Whether the region's entities run on a host (cfg.host is set). */
static inline bool region_remote_active(const struct region *r) { return r->cfg.host != NULL; }

/* Whether the region's entities run on a host that has not answered or
 * is down: nothing can be delivered to them here now. */
static inline bool region_remote_host_down(const struct region *r)
{
	return region_remote_active(r) && !r->cfg.host->ready(r->cfg.host->arg);
}

/* Prepares the region's side of its hosted entities (their stop hook). */
void region_remote_init(struct region *r);

/* Gives `e` to its entity in hosted shard `s`: sent to the entity's
 * process (started through the host's dispatcher if it has none) when no
 * other message of the entity is in flight, else queued behind it. The
 * answer goes when the completion comes (region_remote_handle).
 * `passivate` and `delete` take their turn in the queue and are done here.
 * Without a host to send to, a message is answered
 * {error, host_unavailable}. */
void region_remote_deliver(struct region *r, struct shard *s, const struct envelope *e);

/* Takes a message from the host (term validated, no version byte): a
 * completion or a crash report. Returns false if it is neither (the hub
 * goes on with it); true if it was one — answered and acted on, or
 * dropped as late or unknown — with *shard the shard it concerned
 * (UINT32_MAX: none), whose slot may have something to resume. */
bool region_remote_handle(struct region *r, const char *term, size_t len, uint32_t *shard);

/* The shard leaves (its states are about to go to the new home, or it
 * stops): every message still at or queued for its entities' processes
 * goes back to the front of the slot's buffer, in order, to follow the
 * shard; a completion that comes later is dropped (the shard is no longer
 * hosted), so the new home applies those messages to the state it gets.
 * The processes end when the shard is freed. */
void region_remote_take_back(struct region *r, struct shard_slot *slot);

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
 * their processes to end wait no more. */
void region_remote_on_nodedown(struct region *r, const char *peer);

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

/* Why the processes of the entities stopped next end (sent to each as
 * {'$shardnode_stop', Reason}): "moved" while a shard leaves; NULL: the
 * default, passivation (or shutdown, once the region stopped). */
void region_remote_set_stop_reason(struct region *r, const char *reason);

#endif
