/*
 * region_replica_home.h — replicated state, a shard home's side
 * (region_replica_home.c): each write of a shard homed here goes to the
 * shard's replicas, their acknowledgements say how far writes are durable,
 * and a replica the coordinator adds is filled with the shard's records
 * before it counts. For the files of a region only (region_internal.h says
 * which may call which).
 */
#ifndef SN_REGION_REPLICA_HOME_H
#define SN_REGION_REPLICA_HOME_H

#include "sharding/region_internal.h"
#include "replication/replica_msg.h"

/* The regions named in sets (region_internal.h, struct replica_stream):
 * the index of `pid`, added if it is new (-1: no memory for it); the
 * index of `pid` if known, else -1; the pid of index k. */
int32_t region_replica_region_of(struct region *r, const erlang_pid *pid);
int32_t region_replica_region_find(const struct region *r, const erlang_pid *pid);
const erlang_pid *region_replica_region_pid(const struct region *r, int32_t k);

/* A slot's set, empty (no role, no home known): calloc'ed, or NULL. */
struct slot_replicas *region_replica_slot_new(void);

/* The shard's set (its epoch) names this region its home, with these
 * replicas: a peer still in the set keeps what it acknowledged and its
 * fill; a new one starts with nothing outstanding, and one that is not
 * complete is filled (its records streamed to it; the coordinator hears
 * replica_filled when it holds them all). A peer no longer in the set is
 * forgotten. *repl must exist. Returns 0, or -ENOMEM: the set is not
 * taken (the region is no home of the shard: the caller fences it). */
int region_replica_home_take(struct region *r, uint32_t shard, uint64_t epoch, const erlang_pid *const *replicas,
			     const bool *complete, size_t n);

/* The shard is homed here no more: its peers and fills are forgotten. */
void region_replica_home_drop(struct region *r, uint32_t shard);

/* Hosted shard `shard` is about to serve: true if it must wait for a set
 * that names this region its home (then it is marked claim_waiting, once;
 * the set's arrival ends the claim). False if one has already. */
bool region_replica_home_claim(struct region *r, uint32_t shard);

/* A write of `shard` was queued as store write `seq`: `state` with its
 * version byte, NULL for a deletion. Sent to the shard's replicas if it is
 * homed here; nothing otherwise. */
void region_replica_home_on_write(struct region *r, uint32_t shard, uint64_t seq, const char *id, size_t id_len,
				  const char *state, size_t state_len);

/* Sends the writes batched this turn (one replicate message per replica
 * region). Before the turn's output is written: region_flush_batches. */
void region_replica_home_flush(struct region *r);

/* How far the replicas have acknowledged: every write up to the result
 * is committed on each complete replica of the shard it belongs to
 * (UINT64_MAX: none is outstanding). */
uint64_t region_replica_home_bound(const struct region *r);

/* replicated or replica_fill_ack from a replica of a shard homed here
 * (others are ignored). */
void region_replica_home_on_reply(struct region *r, const struct replica_msg *m);

/* replica_refused: true if the shard is homed here under an older epoch
 * than the replica's (the hub fences it: it stops serving it here). */
bool region_replica_home_on_refused(struct region *r, const struct replica_msg *m);

/* Whether a scan's token is a fill's (the hub's scanned callback serves
 * moves' streams too). */
bool region_replica_home_is_fill_token(uint64_t token);

/* A fill's scan answered (the store's scanned callback). */
void region_replica_home_on_scanned(struct region *r, uint64_t token, int status, const char *chunk, size_t len,
				    bool more, const char *last_key, size_t last_key_len);

/* The store committed more: fills that waited for commits go on. */
void region_replica_home_on_committed(struct region *r);

/* Whether a complete replica of `shard`, homed here, has acknowledged
 * nothing for a fifth of store_timeout_ms (at least 100 ms) while it has
 * the shard's writes to acknowledge: unreachable or stuck. The shard's
 * next changes wait rather than be made on this member alone. */
bool region_replica_home_lagging(const struct region *r, uint32_t shard);

/* Whether region `peer` is a complete replica of `shard`, homed here: it
 * holds every record the home has committed and it acknowledged. */
bool region_replica_home_peer_complete(const struct region *r, uint32_t shard, const erlang_pid *peer);

/* Whether this region is a complete replica of `shard` whose home is
 * `home`: a move from that home needs none of the shard's records sent. */
bool region_replica_holds_all(const struct region *r, uint32_t shard, const erlang_pid *home);

/* Whether the newest replica set of `shard` this region heard of names a
 * home other than `pid` (false when it knows of none): states `pid`
 * streams of the shard are then from a move the coordinator has since
 * overtaken. */
bool region_replica_names_other_home(const struct region *r, uint32_t shard, const erlang_pid *pid);

/* Frees the streams (a batch not sent is dropped). */
void region_replica_home_free(struct region *r);

/* Frees what the slot's set holds (fills, the ids a filling replica
 * keeps) and the set itself. */
void region_replica_free_slot(struct shard_slot *slot);

#endif
