/*
 * replicated_store.h — replicated state (state_replicas; docs/contract.md,
 * "Replicated state") as a store: one entity type's records in this
 * node's own store, and each shard's writes copied to the regions of the
 * same type on other members that the coordinator's replica set names.
 *
 * It wraps the type's handle on the local store (state_store.h) and is
 * used through the same functions, so the region that owns it asks a
 * store, never a replica:
 *
 *   state_store_write      commits here and streams to the shard's
 *                          replicas when this region is the shard's home
 *   written(upto)          reports the lower of this node's commits and
 *                          every complete replica's acknowledgements
 *   state_store_claim      waits for a set naming this region the home
 *                          (claimed() then), as a shared store's claim
 *                          waits for its database
 *   fenced(shard)          a newer set names another home, or a replica
 *                          refused this home's writes
 *   state_store_must_wait  a complete replica has not acknowledged for a
 *                          while: the shard's next changes wait
 *
 * What a store does not say is asked here (replicated_store_*): the
 * messages of the replication protocol (replica_msg.h), the turn's
 * batches, the report a new coordinator rebuilds the sets from, and what
 * a move of a shard may skip because a replica holds it already.
 *
 * The region acting as a replica of a shard homed elsewhere is this
 * store's too: the home's writes and fill chunks are written to the local
 * store and acknowledged once committed (replica_copy.c); the home's side
 * is replica_home.c. Everything runs on the loop's thread; nothing blocks.
 */
#ifndef SN_REPLICATED_STORE_H
#define SN_REPLICATED_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ei.h>

#include "base/evloop.h"
#include "base/log.h"
#include "replication/replica_msg.h"
#include "store/state_store.h"

/* What a replicated store needs of the region that owns it; copied at
 * open. The callbacks run on the loop's thread, never re-entering the
 * store. */
struct replication_env {
	struct evloop *loop;
	const struct logger *log;
	const char *name;           /* the region's, for logs (borrowed: outlives the store) */
	uint32_t number_of_shards;
	uint32_t store_timeout_ms;  /* a replica silent for a fifth of it holds the shard's changes */
	erlang_pid self;            /* the region: replicas answer it, homes are named by it */
	/* Sends a message (encoded, version byte included) to region `to`.
	 * Returns 0 or -errno (the message is lost: acknowledgements are
	 * waited for, and a lost one shows as a timeout). */
	int (*send)(void *arg, const erlang_pid *to, const char *buf, size_t len);
	/* Sends a message to the coordinator the region is registered with;
	 * not registered: returns -ENOTCONN and sends nothing. */
	int (*to_coordinator)(void *arg, const char *buf, size_t len);
	/* Whether the region serves `shard` now: only then does a newer set
	 * naming another home fence it (a shard that left already has
	 * nothing to stop). */
	bool (*serves)(void *arg, uint32_t shard);
	void *arg;
};

struct replicated_store;

/* Opens type `type` of `local` (a store of this node's own: not shared)
 * replicated: `cb` receives the store's outcomes as a state_store_type's
 * would (copied). Reads back each shard's part in its last set as the
 * store kept it, for the first report. Returns the store, or NULL with
 * *err (-ENOMEM, -EINVAL, the local store's error). Closed by
 * state_store_type_close(replicated_store_type(rs)). */
struct replicated_store *replicated_store_open(struct state_store *local, const char *type,
					       const struct state_store_callbacks *cb,
					       const struct replication_env *env, int *err);

/* The store's face: the handle the state_store_* functions take. */
struct state_store_type *replicated_store_type(struct replicated_store *rs);

/* A message of the replication protocol, decoded, sent to the region;
 * `from_coordinator`: by the coordinator the region is registered with
 * (only its sets are taken). Claims, fences and commits it settles are
 * reported through the callbacks before this returns. */
void replicated_store_handle(struct replicated_store *rs, const struct replica_msg *m, bool from_coordinator);

/* Sends the writes batched this turn, one replicate message per replica
 * region: before the turn's output is written. NULL is ignored. */
void replicated_store_flush(struct replicated_store *rs);

/* Encodes into x the replicas_held report (replica_msg.h) of the copies
 * kept here, which a region sends with each registration so a new
 * coordinator rebuilds the sets. With `name_set_homes` (a coordinator of
 * protocol 2 or later) a filling or absent copy names its set's home, if
 * this region heard that set since it started. Returns 0 or -ENOMEM. */
int replicated_store_encode_report(const struct replicated_store *rs, ei_x_buff *x, bool name_set_homes);

/* Whether region `peer` is a complete replica of `shard`, homed here: it
 * holds every record the home committed and it acknowledged. False for
 * rs NULL. */
bool replicated_store_peer_complete(const struct replicated_store *rs, uint32_t shard, const erlang_pid *peer);

/* Whether this region is a complete replica of `shard` whose home is
 * `home`: a move from that home needs none of the shard's records sent.
 * False for rs NULL. */
bool replicated_store_holds_all(const struct replicated_store *rs, uint32_t shard, const erlang_pid *home);

/* Whether the newest set of `shard` heard of here names a home other
 * than `pid` (false when none is known, or rs NULL): states `pid` streams
 * of the shard are from a move the coordinator has since overtaken. */
bool replicated_store_names_other_home(const struct replicated_store *rs, uint32_t shard, const erlang_pid *pid);

#endif
