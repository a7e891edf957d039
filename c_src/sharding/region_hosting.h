/*
 * region_hosting.h — a region whose type runs on a host (a type written
 * in Erlang or Elixir; cfg.host): what the region does for its entities,
 * which live behind hosting/host_entities.h (region_hosting.c). For the
 * files of a region only (region_internal.h says which may call which);
 * other modules use region.h.
 */
#ifndef SN_REGION_HOSTING_H
#define SN_REGION_HOSTING_H

#include "sharding/region_internal.h"

/* With cfg.host, the region's hosted entities (r->hosting), offered the
 * region's answers, store, buffers and coordinator. Returns 0 (also
 * without a host) or -ENOMEM. */
int region_hosting_start(struct region *r);

/* Gives `e` to its entity in hosted shard `s` (host_entities_deliver): a
 * copy of it waits in the entity's mailbox until its process completes
 * it. Out of memory for the copy, it is answered {error, enomem}. */
void region_hosting_deliver(struct region *r, struct shard *s, const struct envelope *e);

/* Starts the process of the live-to-be entity `id` (canonical) of hosted
 * shard `shard` without a message of anyone's: a remembered entity, or a
 * singleton's, runs from when its shard lands here, timers and all. The
 * process is woken by a message of the region's own, '$shardnode_wake',
 * which the entity's process completes without calling the module; it
 * takes its turn as any message does (after the entity's stored state is
 * loaded — the load starts at once — behind what was sent before it), and
 * an entity whose process runs or is being started ignores it. Returns 0,
 * or -ENOBUFS (the slot's buffer is full: the next message starts the
 * entity) or -ENOMEM. */
int region_hosting_wake(struct region *r, uint32_t shard, const char *id, size_t id_len);

#endif
