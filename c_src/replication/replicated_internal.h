/*
 * replicated_internal.h — what the files of a replicated store
 * (replicated_store.h) share. Not for other modules.
 *
 *   replicated_store.c  the store's face (state_store_ops over the local
 *                       type), the local store's outcomes, the protocol's
 *                       dispatch, the callbacks owed to the region
 *   replica_copy.c      the coordinator's sets, and a replica's side: a
 *                       home's writes and fills committed here and
 *                       acknowledged, older epochs refused
 *   replica_home.c      a home's side: each write streamed to the shard's
 *                       replicas, their acknowledgements, new replicas
 *                       filled
 *
 * Calls run one way, down this list. The region hears of claims and
 * fences only once the message that settled them is handled
 * (replicated_owe), so it never re-enters the store from inside it.
 */
#ifndef SN_REPLICATED_INTERNAL_H
#define SN_REPLICATED_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "base/byte_set.h"
#include "replication/replica_sets.h"
#include "replication/replicated_store.h"

/* What this region is in the newest set of a shard heard of. */
enum shard_replica_role {
	SHARD_REPLICA_NONE, /* neither its home nor a replica (as far as known) */
	SHARD_REPLICA_HOME, /* its home: writes go to the peers below */
	SHARD_REPLICA_COPY, /* a replica: the home's writes are committed here */
};

/* The home's side of filling one replica (replica_home.c). */
struct replica_fill;

/* One replica of a shard homed here. */
struct replica_peer {
	int32_t stream;            /* its region: an index in rs->streams */
	bool complete;             /* holds every record: its acks are waited for */
	uint64_t sent;             /* the shard's last write sent to it (0: none) */
	struct replica_fill *fill; /* being filled (owned); NULL otherwise */
};

/* A region of the type on another member this one has had to do with as
 * a home or a replica, and what this home sends it, whatever the shards
 * (replica_home.c): a turn's writes go as one replicate message, and the
 * region acknowledges the last it committed. Regions are named by their
 * index in rs->streams, so a shard's set costs a few integers, not a pid
 * (a kilobyte) per member. */
struct replica_stream;

/* Callbacks owed to the region for a shard (replicated_owe). */
enum {
	SHARD_OWES_FENCE = 1u << 0,   /* it may not write the shard any more */
	SHARD_OWES_CLAIMED = 1u << 1, /* a claim ended (after a fence: one that waited in vain) */
};

/* What this region knows of one shard's set and its part in it.
 * Allocated once the shard first has a set here. */
struct shard_replicas {
	uint64_t epoch; /* of the newest set of the shard heard of here */
	uint8_t role;   /* enum shard_replica_role */
	uint8_t owed;   /* SHARD_OWES_* */
	/* Claimed (state_store_claim) before a set named this region its
	 * home: claimed() follows the set that does. */
	bool claim_waiting;
	/* SHARD_REPLICA_HOME: */
	uint8_t npeers;
	struct replica_peer peers[REPLICA_SETS_MAX];
	/* The home of the newest set heard of (an index in rs->streams; -1:
	 * none known). */
	int32_t home;
	uint32_t home_gen; /* grows whenever home does: acks owed to an earlier one are dropped */
	/* SHARD_REPLICA_COPY: */
	bool complete;     /* the coordinator counts this copy as holding everything */
	bool filling;      /* between fill chunk 0 and the last one */
	uint64_t next_chunk;
	struct byte_set written; /* filling: ids written live since chunk 0 */
	/* The last write of the shard this store made itself (a copy of the
	 * home's writes, a fill): a load here waits for its commit. */
	uint64_t copied_seq;
	/* What the store keeps of this (replica_copy.c): the epoch and part
	 * (enum replica_role_held) last written; after a restart, until a set
	 * of the shard is heard, `restored` — what was read back is what the
	 * report says. */
	uint64_t saved_epoch;
	uint8_t saved_part;
	bool restored;
};

/* A replica's acknowledgement waiting for its commit (replica_copy.c). */
struct replica_ack_due;

struct replicated_store {
	/* The face: a type handle whose store dispatches to the ops of
	 * replicated_store.c. face.store points at face_store. */
	struct state_store_type face;
	struct state_store face_store;
	struct state_store *local;      /* not owned */
	struct state_store_type *local_type; /* owned */
	struct state_store_callbacks up; /* the region's */
	struct replication_env env;
	struct shard_replicas **shards; /* env.number_of_shards; each NULL until needed */
	uint64_t committed_upto;        /* how far the local store has committed */
	uint64_t reported_upto;         /* the last written() told the region */
	bool owed;                      /* some shard's owed is set */
	bool recheck;                   /* acknowledgements came or a set changed */
	/* replica_copy.c's: acknowledgements waiting for commits (owned). */
	struct replica_ack_due *acks_head, *acks_tail;
	/* replica_home.c's */
	bool fills_awaiting_commit;
	uint32_t fill_gen; /* the last fill's number */
	/* The regions named in sets, one stream each (owned; never removed,
	 * indexes stable). */
	struct replica_stream *streams;
	uint32_t nstreams, streams_cap;
};

/* The shard's set as known here, or NULL if none is known (or the shard
 * is out of range). */
static inline struct shard_replicas *replicated_shard_known(const struct replicated_store *rs, uint32_t shard)
{
	return shard < rs->env.number_of_shards ? rs->shards[shard] : NULL;
}

/* The shard's set as known here, allocated empty (no role, no home known)
 * if it is new; NULL: no memory, or the shard is out of range. */
static inline struct shard_replicas *replicated_shard(struct replicated_store *rs, uint32_t shard)
{
	if (shard >= rs->env.number_of_shards)
		return NULL;
	if (rs->shards[shard] == NULL && (rs->shards[shard] = calloc(1, sizeof *rs->shards[shard])) != NULL)
		rs->shards[shard]->home = -1;
	return rs->shards[shard];
}

/* The region is owed `bit` (SHARD_OWES_*) for `shard`: told once the
 * entry point under way is done (replicated_store.c). */
static inline void replicated_owe(struct replicated_store *rs, uint32_t shard, uint8_t bit)
{
	rs->shards[shard]->owed |= bit;
	rs->owed = true;
}

/* ---- replica_copy.c ---- */

/* A set, a home's writes or a fill chunk (the caller checked the shard is
 * in range, and a set's sender). */
void replica_copy_on_set(struct replicated_store *rs, const struct replica_msg *m);
void replica_copy_on_writes(struct replicated_store *rs, const struct replica_msg *m);
void replica_copy_on_fill(struct replicated_store *rs, const struct replica_msg *m);

/* The local store committed up to rs->committed_upto with `status`: the
 * acknowledgements that covers go to the homes (none for a failed
 * commit: its writes are not here). */
void replica_copy_on_committed(struct replicated_store *rs, int status);

/* Each shard's part as the store kept it, read at open. Returns 0 or the
 * store's error. */
int replica_copy_restore(struct replicated_store *rs);

/* Frees the acknowledgements owed. */
void replica_copy_free(struct replicated_store *rs);

/* ---- replica_home.c ---- */

/* The regions named in sets: the index of `pid`, added if it is new (-1:
 * no memory); the index of `pid` if known, else -1; the pid of index k. */
int32_t replicated_region_of(struct replicated_store *rs, const erlang_pid *pid);
int32_t replicated_region_find(const struct replicated_store *rs, const erlang_pid *pid);
const erlang_pid *replicated_region_pid(const struct replicated_store *rs, int32_t k);

/* The shard's set (its epoch) names this region its home, with these
 * replicas: a peer still in the set keeps what it acknowledged and its
 * fill; a new one starts with nothing outstanding, and one that is not
 * complete is filled. Returns 0, or -ENOMEM: the set is not taken. */
int replica_home_take(struct replicated_store *rs, uint32_t shard, uint64_t epoch,
		      const erlang_pid *const *replicas, const bool *complete, size_t n);

/* The shard is homed here no more: its peers and fills are forgotten. */
void replica_home_drop(struct replicated_store *rs, uint32_t shard);

/* A write of `shard` queued here as `seq` (state with its version byte,
 * NULL: a deletion), streamed to its replicas if it is homed here. */
void replica_home_on_write(struct replicated_store *rs, uint32_t shard, uint64_t seq, const char *id,
			   size_t id_len, const char *state, size_t state_len);

/* Sends the turn's batches. */
void replica_home_flush(struct replicated_store *rs);

/* The number of the last write added to any replica's stream (0: none):
 * sent, or to be sent at the turn's end, so it may be committed there. */
uint64_t replica_home_last_streamed(const struct replicated_store *rs);

/* How far the replicas have acknowledged (UINT64_MAX: nothing
 * outstanding). */
uint64_t replica_home_bound(const struct replicated_store *rs);

/* replicated or replica_fill_ack from a replica. */
void replica_home_on_reply(struct replicated_store *rs, const struct replica_msg *m);

/* replica_refused: true if the shard is homed here under an older epoch
 * than the replica's (then it is dropped here). */
bool replica_home_on_refused(struct replicated_store *rs, const struct replica_msg *m);

/* Whether a scan's token is a fill's; a fill's scan answered. */
bool replica_home_is_fill_token(uint64_t token);
void replica_home_on_scanned(struct replicated_store *rs, uint64_t token, int status, const char *chunk,
			     size_t len, bool more, const char *last_key, size_t last_key_len);

/* The local store committed more: fills that waited for it go on. */
void replica_home_on_committed(struct replicated_store *rs);

/* Whether a complete replica of `shard` (homed here) has acknowledged
 * nothing for a fifth of store_timeout_ms (at least 100 ms) while it has
 * the shard's writes to acknowledge. */
bool replica_home_lagging(const struct replicated_store *rs, uint32_t shard);

/* Frees the streams, and a shard's fills. */
void replica_home_free(struct replicated_store *rs);
void replica_home_free_shard(struct shard_replicas *p);

#endif
