/*
 * remember_share.h — keeps the remembered-entity store (remember.h) of one
 * entity type the same on every member hosting the type.
 *
 * The region that hosts a shard records each entity that starts or stops
 * for good, and sends the changes, batched once per loop turn, to the
 * region of the type on every other member hosting it:
 *
 *   {'$shardnode', remembered, FromNode, [{ShardId, Live, EntityId}]}
 *
 * Live is true for a started entity, false for one stopped for good. A
 * member that joins is sent the sets of the shards this region hosts, in
 * the same message, so it can take any shard over later.
 */
#ifndef SN_REMEMBER_SHARE_H
#define SN_REMEMBER_SHARE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ei.h>

#include "distribution/dist_node.h"
#include "base/evloop.h"
#include "base/log.h"
#include "store/remember.h"
#include "sharding/members_hosting.h"

struct remember_share;

struct remember_share_config {
	struct dist_node *node;    /* not owned */
	/* Where its messages leave (protocol/outlet.h): the region's, whose
	 * ops region_start has set. */
	struct outlet out;
	struct evloop *loop;       /* not owned */
	const struct logger *log;  /* not owned */
	struct remember *store;    /* not owned; outlives the replica */
	const char *type_name;     /* the regions' registered name; not owned */
	erlang_pid from;           /* the sender of our messages: the region */
	/* The members hosting the type, this one included (members_hosting.h). */
	members_hosting_fn *members_hosting;
	void *members_arg;
};

/* Returns a replica, or NULL with *err = -ENOMEM. */
struct remember_share *remember_share_new(const struct remember_share_config *cfg, int *err);

/* Sends what is queued, then frees. NULL is fine. */
void remember_share_free(struct remember_share *rr);

/* A local entity started / stopped for good: records it and queues the
 * change for the other members. Shaped as shard_observer callbacks; `arg`
 * is the replica. */
void remember_share_started(void *arg, uint32_t shard, const char *id, size_t len);
void remember_share_stopped(void *arg, uint32_t shard, const char *id, size_t len);

/* What the region is told of, and asked, while a `remembered` message is
 * applied. */
struct remember_msg_hooks {
	/* An entity reported started (now in the store), so the region can
	 * start it if it hosts the shard: a change that arrives after the shard
	 * moved here. NULL: not told. */
	void (*live)(void *arg, uint32_t shard, const char *id, size_t len);
	/* Whether this region hosts `shard`. Its home alone says which of its
	 * entities stopped: a stop reported by another member (a late one from
	 * the shard's previous home) is ignored, or an entity running here
	 * would be forgotten. NULL: hosts none. */
	bool (*hosts)(void *arg, uint32_t shard);
	/* Such an ignored stop, for an id this store still has: the region
	 * tells the others it lives (remember_share_announce), so their
	 * copies do not lose it. NULL: not told. */
	void (*kept)(void *arg, uint32_t shard, const char *id, size_t len);
	void *arg;
};

/* Handles a `remembered` message (a validated term, no version byte) that
 * came from node `via` (proc_msg.via): applies it to the store, with
 * `hooks` (NULL: none) — unless the sender it names is not `via`: then it
 * is ignored (logged) and 1 returned. Returns 1 if it was one, 0 if the
 * term is not a `remembered` message, -EPROTO if it is malformed (entries
 * before the fault are applied; logged), -ENOMEM. */
int remember_share_handle(struct remember_share *rr, const char *term, size_t len,
			    const struct remember_msg_hooks *hooks, const char *via);

/* The core of remember_share_handle, without a replica and without
 * logging: `from` (NODE_NAME_BUF bytes) gets the sender's node name, or ""
 * if it could not be read (not an atom, or too long for a node name: the
 * message is malformed). Same returns. */
int remember_msg_apply(struct remember *store, const char *term, size_t len, const struct remember_msg_hooks *hooks,
		       char *from);

/* Queues `id` of `shard` as live for the other members, whatever the
 * store holds: see remember_msg_hooks.kept. */
void remember_share_announce(struct remember_share *rr, uint32_t shard, const char *id, size_t len);

/* After a membership change: members hosting the type that have not been
 * sent the sets of `shards` (read during the call only) get them now. A
 * member that leaves is forgotten, so it gets them again if it comes back.
 * Out of memory, the members stay unsynced and the next change retries. */
void remember_share_sync(struct remember_share *rr, const uint32_t *shards, size_t n);

#endif
