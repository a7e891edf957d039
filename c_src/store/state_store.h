/*
 * state_store.h — what a region asks of a durable store of entity states,
 * whichever store it is (docs/contract.md, "Entity state"): `lmdb`
 * (state_lmdb.h) and `postgres` (state_pg.h).
 *
 * A store is one object per node; each entity type opens a handle on it.
 * Records are keyed by (type, shard, canonical id) and hold the state as an
 * Erlang term in external format, version byte included. Every operation
 * returns at once: writes and reads complete later, through the type's
 * callbacks, always on the loop's thread.
 *
 * Writes are numbered in the order queued (1, 2, ...), across all types of
 * the store, and are reported committed in that order: "written up to N"
 * says all there is to say about a write — except, in a store every member
 * shares, that a write may be refused as stale (fenced, below).
 *
 * Fencing (a shared store): a node that starts hosting a shard claims it
 * first (state_store_claim). The claim takes an epoch greater than any
 * claim of the shard before, by any member, and the store keeps the
 * shard's newest epoch; each write carries its node's epoch of the shard,
 * and a write whose epoch is not the newest is not applied. So a node that
 * lost a shard while paused or cut off cannot overwrite what the shard's
 * new home wrote, whatever it still has queued or still believes.
 *
 * An implementation embeds `struct state_store` as the first member of its
 * store and `struct state_store_type` as the first member of its type
 * handle, and fills in the ops; the inline functions below dispatch.
 */
#ifndef SN_STATE_STORE_H
#define SN_STATE_STORE_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/histogram.h"

struct state_store_type;

/* Every write numbered up to `upto` not reported before has been committed
 * (status 0), has failed (status -errno: none of those writes is in the
 * store), or, status STATE_STORE_UNCONFIRMED, may be in it or not: the
 * connection to the database was lost while their commit was under way.
 * Called for each commit, in order, for every open type. */
typedef void (*state_store_written_fn)(void *arg, uint64_t upto, int status);
#define STATE_STORE_UNCONFIRMED (-ECONNRESET)

/* The answer to a load: found 1 with the stored state (state[0..len),
 * version byte included, valid during the call), 0 not stored (state
 * NULL), or -errno. */
typedef void (*state_store_loaded_fn)(void *arg, uint64_t token, int found, const char *state, size_t len);

/* The answer to a scan: status 0 with the shard's next records as one term
 * [{Id, State}] (no version byte; [] when none is left) and the key of the
 * last record in it, to scan on from (both valid during the call); `more`
 * says whether records remain after it. Or status -errno (chunk NULL). */
typedef void (*state_store_scanned_fn)(void *arg, uint64_t token, int status, const char *chunk, size_t len,
				       bool more, const char *last_key, size_t last_key_len);

/* The claim of `shard` (state_store_claim) is committed: this node's
 * writes of it now carry the shard's newest epoch, and its loads are
 * answered from here on. A replicated store's claim ends once a replica
 * set names this node the shard's home — or, fenced first, in vain. */
typedef void (*state_store_claimed_fn)(void *arg, uint32_t shard);

/* Another member claimed `shard` since this node did: this node's writes
 * of it not yet reported written are not in the store, and no later one
 * will be, until it claims the shard again. Called before the written()
 * that covers them (which reports the status of the others in their
 * commit). Called once per claim lost. A replicated store (a store of the
 * node's own, replicated_store.h) reports so when a newer replica set
 * names another member the shard's home: its writes stay here, but the
 * shard is no longer this node's to write. */
typedef void (*state_store_fenced_fn)(void *arg, uint32_t shard);

/* One shard's own record (state_store_shard_meta_read): valid during the
 * call. Returns 0 to go on or a negative errno, which ends the read. */
typedef int (*state_store_meta_fn)(void *arg, uint32_t shard, const void *meta, size_t len);

/* The most bytes a scan's cursor key has. */
#define STATE_STORE_KEY_MAX 511

struct state_store_callbacks {
	state_store_written_fn written;
	state_store_loaded_fn loaded;
	state_store_scanned_fn scanned;
	state_store_claimed_fn claimed; /* a shared store only */
	state_store_fenced_fn fenced;   /* likewise */
	void *arg;
};

struct state_store;

/* The operations, with the contracts of the inline functions below. */
struct state_store_ops {
	void (*free)(struct state_store *s);
	struct state_store_type *(*type_open)(struct state_store *s, const char *type,
					      const struct state_store_callbacks *cb, int *err);
	void (*type_close)(struct state_store_type *t);
	int (*write)(struct state_store_type *t, uint32_t shard, const char *id, size_t id_len, const char *state,
		     size_t state_len, uint64_t *seq);
	int (*delete_shard)(struct state_store_type *t, uint32_t shard, uint64_t *seq);
	int (*load)(struct state_store_type *t, uint32_t shard, const char *id, size_t id_len, uint64_t token);
	int (*scan)(struct state_store_type *t, uint32_t shard, const char *after_key, size_t after_len,
		    size_t max_bytes, uint64_t token);
	uint64_t (*cancel_queued)(struct state_store_type *t);
	uint64_t (*last_queued)(const struct state_store *s);
	/* NULL (a local store): reachable while its commits succeed */
	const char *(*unreachable)(const struct state_store *s);
	int (*claim)(struct state_store_type *t, uint32_t shard); /* NULL: nothing to claim */
	/* NULL (a shared store): no shard records */
	int (*shard_meta_write)(struct state_store_type *t, uint32_t shard, const void *meta, size_t len,
				uint64_t *seq);
	int (*shard_meta_read)(struct state_store_type *t, state_store_meta_fn fn, void *arg);
	/* NULL (a store of one node's or a shared one): never waits, nothing
	 * committed here waits for other members, nothing copied in */
	bool (*must_wait)(const struct state_store_type *t, uint32_t shard);
	bool (*waits_only_elsewhere)(const struct state_store_type *t, uint64_t seq);
	uint64_t (*copied_upto)(const struct state_store_type *t, uint32_t shard);
};

/* What the metrics endpoint shows of a store (docs/metrics.md), kept by
 * the implementations on the loop's thread through the two functions
 * below. A commit's latency is how long its oldest write waited: from
 * being queued to the commit's report, what a reply held for it waits. */
#define STATE_STORE_TIMED 1024 /* writes whose queueing time is kept, by seq */
struct state_store_metrics {
	uint64_t writes;        /* queued: puts, deletes, shard deletes */
	uint64_t commits;       /* commit reports */
	uint64_t commit_errors; /* of those, failed */
	struct histogram commit_latency;
	uint64_t reported_upto;
	uint64_t last_failure_ns; /* when the last commit failed, if the last one did; 0: it did not */
	uint64_t queued_seq[STATE_STORE_TIMED], queued_ns[STATE_STORE_TIMED];
};

struct state_store {
	const struct state_store_ops *ops;
	struct state_store_metrics metrics;
	/* Every member reads the same records (a database), so a shard's move
	 * carries no states: the new home reads them, once the old home's
	 * writes are committed. False: each node has its own (lmdb). */
	bool shared;
};

struct state_store_type {
	struct state_store *store;
};

/* For implementations: write `seq` was queued at now_ns (the loop's). */
static inline void state_store_metrics_queued(struct state_store *s, uint64_t seq, uint64_t now_ns)
{
	struct state_store_metrics *m = &s->metrics;
	m->writes++;
	m->queued_seq[seq % STATE_STORE_TIMED] = seq;
	m->queued_ns[seq % STATE_STORE_TIMED] = now_ns;
}

/* For implementations: a commit of the writes up to `upto` was reported
 * at now_ns with `status`. */
static inline void state_store_metrics_committed(struct state_store *s, uint64_t upto, int status, uint64_t now_ns)
{
	struct state_store_metrics *m = &s->metrics;
	if (upto <= m->reported_upto)
		return;
	uint64_t oldest = m->reported_upto + 1;
	m->reported_upto = upto;
	m->commits++;
	m->last_failure_ns = status != 0 ? (now_ns ? now_ns : 1) : 0;
	if (status != 0)
		m->commit_errors++;
	/* Timed unless its slot was taken by a later write meanwhile. */
	if (m->queued_seq[oldest % STATE_STORE_TIMED] == oldest && now_ns >= m->queued_ns[oldest % STATE_STORE_TIMED])
		histogram_observe(&m->commit_latency, now_ns - m->queued_ns[oldest % STATE_STORE_TIMED]);
}

/* The store's metrics, read on the loop's thread. */
static inline const struct state_store_metrics *state_store_get_metrics(const struct state_store *s)
{
	return &s->metrics;
}

/* Commits what is queued (waiting for it), closes the store and frees it;
 * no callback runs any more. Every type must have been closed. NULL is
 * ignored. */
static inline void state_store_free(struct state_store *s)
{
	if (s != NULL)
		s->ops->free(s);
}

/* Opens the store's records of entity type `type`; its callbacks go to
 * `cb` (copied). Returns the handle, or NULL with *err (-EINVAL for a type
 * open already or too many types, -ENOMEM, -EIO). */
static inline struct state_store_type *state_store_type_open(struct state_store *s, const char *type,
							     const struct state_store_callbacks *cb, int *err)
{
	return s->ops->type_open(s, type, cb, err);
}

/* No callback of the type runs after this (its loads and scans are
 * dropped unanswered; its queued writes still commit). NULL is ignored. */
static inline void state_store_type_close(struct state_store_type *t)
{
	if (t != NULL)
		t->store->ops->type_close(t);
}

/* Queues the record of (shard, id): `state` (state_len >= 1 bytes, version
 * byte included, copied), or, state NULL, its deletion (deleting what is
 * not stored is no error). *seq gets the write's number. Returns 0,
 * -EINVAL, or -ENOMEM (nothing queued). */
static inline int state_store_write(struct state_store_type *t, uint32_t shard, const char *id, size_t id_len,
				    const char *state, size_t state_len, uint64_t *seq)
{
	return t->store->ops->write(t, shard, id, id_len, state, state_len, seq);
}

/* Queues the deletion of every record of `shard`, as one write (*seq),
 * ordered with the others. Returns 0 or -ENOMEM. */
static inline int state_store_delete_shard(struct state_store_type *t, uint32_t shard, uint64_t *seq)
{
	return t->store->ops->delete_shard(t, shard, seq);
}

/* Queues a load of (shard, id), answered with `token`. A load sees every
 * write committed before it runs, maybe later ones: a caller that must not
 * miss a write waits for its commit first. A load of a shard whose claim
 * is under way runs after the claim is committed. Returns 0 or -ENOMEM (no
 * answer will come). */
static inline int state_store_load(struct state_store_type *t, uint32_t shard, const char *id, size_t id_len,
				   uint64_t token)
{
	return t->store->ops->load(t, shard, id, id_len, token);
}

/* Queues a scan of the records of `shard` in key order from the one after
 * `after_key` (after_len 0: from the first), answered with `token`; the
 * chunk ends once it holds at least max_bytes. Returns 0, -EINVAL
 * (after_len above STATE_STORE_KEY_MAX) or -ENOMEM. */
static inline int state_store_scan(struct state_store_type *t, uint32_t shard, const char *after_key,
				   size_t after_len, size_t max_bytes, uint64_t token)
{
	return t->store->ops->scan(t, shard, after_key, after_len, max_bytes, token);
}

/* Cancels the type's writes not yet being committed: they will not be
 * written (their numbers are still reported, as if written). Returns the
 * number of the last write already being committed (sent to the database,
 * or taken by the writer): a write numbered up to it may still land, or
 * may have; every later write of this type is cancelled. For giving up on
 * a store that does not answer. */
static inline uint64_t state_store_cancel_queued(struct state_store_type *t)
{
	return t->store->ops->cancel_queued(t);
}

/* Claims `shard` for this node (fencing, above): the shard's epoch grows
 * past every claim before, and claimed() says when it is committed — the
 * store keeps trying until it is (while its server is away, say), unless
 * the type closes. Until then this node must not write the shard; its
 * loads of it wait. Claiming a shard again (it came back) takes a newer
 * epoch. Returns 0 (claimed() will follow), 1 (a store of this node's own:
 * nobody else writes it, nothing to claim, no callback), or -ENOMEM. */
static inline int state_store_claim(struct state_store_type *t, uint32_t shard)
{
	if (t->store->ops->claim == NULL)
		return 1;
	return t->store->ops->claim(t, shard);
}

/* A store of this node's own keeps a small record per shard of a type
 * for the region (replicated state: the epoch and its part in the shard's
 * last set), written in order with the type's writes, so it survives a
 * crash exactly as far as they do. Queues `meta` (copied) as the shard's
 * record (*seq). Returns 0, -ENOMEM, or -ENOTSUP (a store without them). */
static inline int state_store_shard_meta_write(struct state_store_type *t, uint32_t shard, const void *meta,
					       size_t len, uint64_t *seq)
{
	if (t->store->ops->shard_meta_write == NULL)
		return -ENOTSUP;
	return t->store->ops->shard_meta_write(t, shard, meta, len, seq);
}

/* Every shard record committed, to fn, on the caller's thread (a type's
 * start). Returns 0 (none too), fn's error, -errno, or -ENOTSUP. */
static inline int state_store_shard_meta_read(struct state_store_type *t, state_store_meta_fn fn, void *arg)
{
	if (t->store->ops->shard_meta_read == NULL)
		return -ENOTSUP;
	return t->store->ops->shard_meta_read(t, fn, arg);
}

/* Whether the shard's writes cannot be made durable now (a replicated
 * store: a copy on another member has not acknowledged for a while): the
 * shard's next changes should wait rather than exist on this member
 * alone. The store reports written() when that may have ended. */
static inline bool state_store_must_wait(const struct state_store_type *t, uint32_t shard)
{
	return t->store->ops->must_wait != NULL && t->store->ops->must_wait(t, shard);
}

/* Whether write `seq`, not yet reported written, is committed on this
 * member and waits only for copies on others (a replicated store): its
 * change is applied, so giving up on it would not be true. */
static inline bool state_store_waits_only_elsewhere(const struct state_store_type *t, uint64_t seq)
{
	return t->store->ops->waits_only_elsewhere != NULL && t->store->ops->waits_only_elsewhere(t, seq);
}

/* The last write of `shard` the store queued itself rather than through
 * state_store_write (a replicated store's copy of another member's
 * writes); 0: none. A load of the shard's entities waits for its commit. */
static inline uint64_t state_store_copied_upto(const struct state_store_type *t, uint32_t shard)
{
	return t->store->ops->copied_upto != NULL ? t->store->ops->copied_upto(t, shard) : 0;
}

/* The number of the last write queued (0: none yet). */
static inline uint64_t state_store_last_queued(const struct state_store *s)
{
	return s->ops->last_queued(s);
}

/* How long a failed commit keeps the store shown unreachable unless a
 * commit succeeds: a node with no more writes to try is ready again. */
#define STATE_STORE_FAILURE_SHOWN_NS (10ull * 1000000000ull)

/* Why the store cannot take writes now (static text, for the readiness
 * check), or NULL when it can: a database's connection is down, or the
 * last commit failed (within STATE_STORE_FAILURE_SHOWN_NS of now_ns, the
 * loop's clock). */
static inline const char *state_store_unreachable(const struct state_store *s, uint64_t now_ns)
{
	const char *why = s->ops->unreachable != NULL ? s->ops->unreachable(s) : NULL;
	uint64_t failed = s->metrics.last_failure_ns;
	if (why == NULL && failed != 0 && now_ns - failed < STATE_STORE_FAILURE_SHOWN_NS)
		why = "the store's last commit failed";
	return why;
}

#endif
