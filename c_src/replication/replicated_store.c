/*
 * replicated_store.c — a replicated store's face (replicated_store.h):
 * the state_store ops over the local type, the local store's outcomes,
 * the protocol's dispatch, and the callbacks owed to the region.
 *
 * Durable. A write is reported written once the local store has
 * committed it and every complete replica of its shard homed here has
 * acknowledged it (replica_home_bound): the lower of the two. A replica
 * that falls silent holds that number back; the region's own timeout
 * (store_timeout_ms) and the coordinator replacing the replica (a new
 * set, which drops it from the bound) are what end the wait.
 *
 * Owed callbacks. Handling a message may end a claim or fence a shard;
 * the region hears of each after the message is handled
 * (tell_owed), fences first, then claims, then what became durable —
 * never from inside the store's own work.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "replication/replicated_internal.h"

static struct replicated_store *of_type(const struct state_store_type *t)
{
	return (struct replicated_store *)((char *)t - offsetof(struct replicated_store, face));
}

static struct replicated_store *of_store(const struct state_store *s)
{
	return (struct replicated_store *)((char *)s - offsetof(struct replicated_store, face_store));
}

/* How far writes are durable here and on every complete replica. */
static uint64_t durable_upto(const struct replicated_store *rs)
{
	uint64_t bound = replica_home_bound(rs);
	return bound < rs->committed_upto ? bound : rs->committed_upto;
}

/* Tells the region what it is owed: fences, ended claims, then (after a
 * message that may have moved it) how far writes are durable. */
static void tell_owed(struct replicated_store *rs)
{
	while (rs->owed) {
		rs->owed = false;
		for (uint32_t s = 0; s < rs->env.number_of_shards; s++) {
			struct shard_replicas *p = rs->shards[s];
			if (p == NULL || p->owed == 0)
				continue;
			uint8_t owed = p->owed;
			p->owed = 0;
			if ((owed & SHARD_OWES_FENCE) && rs->up.fenced != NULL)
				rs->up.fenced(rs->up.arg, s);
			if ((owed & SHARD_OWES_CLAIMED) && rs->up.claimed != NULL)
				rs->up.claimed(rs->up.arg, s);
		}
	}
	if (rs->recheck) {
		rs->recheck = false;
		uint64_t upto = durable_upto(rs);
		if (upto > rs->reported_upto)
			rs->reported_upto = upto;
		rs->up.written(rs->up.arg, rs->reported_upto, 0);
	}
}

/* ---- the local store's outcomes ---- */

static void on_local_written(void *arg, uint64_t upto, int status)
{
	struct replicated_store *rs = arg;
	if (upto > rs->committed_upto)
		rs->committed_upto = upto;
	/* A replica's acknowledgements of what it committed, and fills that
	 * waited for commits. */
	replica_copy_on_committed(rs, status);
	replica_home_on_committed(rs);
	if (status != 0) {
		/* None of those writes is here: the region answers their
		 * replies with an error, whatever the replicas hold. */
		if (upto > rs->reported_upto)
			rs->reported_upto = upto;
		rs->up.written(rs->up.arg, upto, status);
		return;
	}
	rs->recheck = true;
	tell_owed(rs);
}

static void on_local_loaded(void *arg, uint64_t token, int found, const char *state, size_t len)
{
	struct replicated_store *rs = arg;
	rs->up.loaded(rs->up.arg, token, found, state, len);
}

static void on_local_scanned(void *arg, uint64_t token, int status, const char *chunk, size_t len, bool more,
			     const char *last_key, size_t last_key_len)
{
	struct replicated_store *rs = arg;
	if (replica_home_is_fill_token(token))
		replica_home_on_scanned(rs, token, status, chunk, len, more, last_key, last_key_len);
	else
		rs->up.scanned(rs->up.arg, token, status, chunk, len, more, last_key, last_key_len);
}

/* ---- the face ---- */

static int face_write(struct state_store_type *t, uint32_t shard, const char *id, size_t id_len, const char *state,
		      size_t state_len, uint64_t *seq)
{
	struct replicated_store *rs = of_type(t);
	int rc = state_store_write(rs->local_type, shard, id, id_len, state, state_len, seq);
	if (rc == 0)
		replica_home_on_write(rs, shard, *seq, id, id_len, state, state_len);
	return rc;
}

static int face_delete_shard(struct state_store_type *t, uint32_t shard, uint64_t *seq)
{
	return state_store_delete_shard(of_type(t)->local_type, shard, seq);
}

static int face_load(struct state_store_type *t, uint32_t shard, const char *id, size_t id_len, uint64_t token)
{
	return state_store_load(of_type(t)->local_type, shard, id, id_len, token);
}

static int face_scan(struct state_store_type *t, uint32_t shard, const char *after_key, size_t after_len,
		     size_t max_bytes, uint64_t token)
{
	return state_store_scan(of_type(t)->local_type, shard, after_key, after_len, max_bytes, token);
}

/* What the local store still had taken, or what went to a replica's
 * stream already, whichever is later: a write streamed may be committed
 * on the replica, and so survive a fail-over to it. */
static uint64_t face_cancel_queued(struct state_store_type *t)
{
	struct replicated_store *rs = of_type(t);
	uint64_t local = state_store_cancel_queued(rs->local_type);
	uint64_t streamed = replica_home_last_streamed(rs);
	return streamed > local ? streamed : local;
}

static uint64_t face_last_queued(const struct state_store *s) { return state_store_last_queued(of_store(s)->local); }

static const char *face_unreachable(const struct state_store *s)
{
	const struct state_store *local = of_store(s)->local;
	return local->ops->unreachable != NULL ? local->ops->unreachable(local) : NULL;
}

/* A shard about to be served here waits for a set naming this region its
 * home: a write acknowledged before its replicas are known would exist on
 * this member alone. */
static int face_claim(struct state_store_type *t, uint32_t shard)
{
	struct replicated_store *rs = of_type(t);
	struct shard_replicas *p = replicated_shard(rs, shard);
	if (p == NULL)
		return 1; /* no memory to wait in: served as without replicas */
	if (p->role == SHARD_REPLICA_HOME || p->claim_waiting)
		return 1; /* named home already, or already waiting */
	p->claim_waiting = true;
	return 0;
}

static int face_meta_write(struct state_store_type *t, uint32_t shard, const void *meta, size_t len, uint64_t *seq)
{
	return state_store_shard_meta_write(of_type(t)->local_type, shard, meta, len, seq);
}

static int face_meta_read(struct state_store_type *t, state_store_meta_fn fn, void *arg)
{
	return state_store_shard_meta_read(of_type(t)->local_type, fn, arg);
}

static bool face_must_wait(const struct state_store_type *t, uint32_t shard)
{
	return replica_home_lagging(of_type(t), shard);
}

static bool face_waits_only_elsewhere(const struct state_store_type *t, uint64_t seq)
{
	return seq <= of_type(t)->committed_upto;
}

static uint64_t face_copied_upto(const struct state_store_type *t, uint32_t shard)
{
	const struct shard_replicas *p = replicated_shard_known(of_type(t), shard);
	return p != NULL ? p->copied_seq : 0;
}

static void face_type_close(struct state_store_type *t)
{
	struct replicated_store *rs = of_type(t);
	state_store_type_close(rs->local_type);
	replica_copy_free(rs);
	replica_home_free(rs);
	for (uint32_t s = 0; s < rs->env.number_of_shards; s++)
		replica_home_free_shard(rs->shards[s]);
	free(rs->shards);
	free(rs);
}

/* The face is a type handle, never a store a region opens types on or
 * frees: those two ops are not reached. */
static void face_free(struct state_store *s) { (void)s; }

static struct state_store_type *face_type_open(struct state_store *s, const char *type,
					       const struct state_store_callbacks *cb, int *err)
{
	(void)s;
	(void)type;
	(void)cb;
	*err = -EINVAL;
	return NULL;
}

static const struct state_store_ops face_ops = {
	.free = face_free,
	.type_open = face_type_open,
	.type_close = face_type_close,
	.write = face_write,
	.delete_shard = face_delete_shard,
	.load = face_load,
	.scan = face_scan,
	.cancel_queued = face_cancel_queued,
	.last_queued = face_last_queued,
	.unreachable = face_unreachable,
	.claim = face_claim,
	.shard_meta_write = face_meta_write,
	.shard_meta_read = face_meta_read,
	.must_wait = face_must_wait,
	.waits_only_elsewhere = face_waits_only_elsewhere,
	.copied_upto = face_copied_upto,
};

/* ---- life ---- */

struct replicated_store *replicated_store_open(struct state_store *local, const char *type,
					       const struct state_store_callbacks *cb,
					       const struct replication_env *env, int *err)
{
	if (local->shared || env->number_of_shards == 0) {
		*err = -EINVAL;
		return NULL;
	}
	struct replicated_store *rs = calloc(1, sizeof *rs);
	if (rs == NULL || (rs->shards = calloc(env->number_of_shards, sizeof *rs->shards)) == NULL) {
		free(rs);
		*err = -ENOMEM;
		return NULL;
	}
	rs->face_store.ops = &face_ops;
	rs->face.store = &rs->face_store;
	rs->local = local;
	rs->up = *cb;
	rs->env = *env;
	const struct state_store_callbacks local_cb = {
		.written = on_local_written,
		.loaded = on_local_loaded,
		.scanned = on_local_scanned,
		.arg = rs,
	};
	rs->local_type = state_store_type_open(local, type, &local_cb, err);
	if (rs->local_type == NULL) {
		free(rs->shards);
		free(rs);
		return NULL;
	}
	rs->committed_upto = rs->reported_upto = state_store_last_queued(local);
	int rc = replica_copy_restore(rs);
	if (rc != 0) {
		face_type_close(&rs->face);
		*err = rc;
		return NULL;
	}
	return rs;
}

struct state_store_type *replicated_store_type(struct replicated_store *rs) { return &rs->face; }

/* ---- the protocol ---- */

void replicated_store_handle(struct replicated_store *rs, const struct replica_msg *m, bool from_coordinator)
{
	switch (m->kind) {
	case RMSG_REPLICATE:
		replica_copy_on_writes(rs, m);
		break;
	case RMSG_REPLICATED:
		replica_home_on_reply(rs, m);
		rs->recheck = true;
		break;
	case RMSG_SET:
		if (!from_coordinator || m->shard >= rs->env.number_of_shards)
			break; /* an earlier coordinator's */
		replica_copy_on_set(rs, m);
		rs->recheck = true; /* peers gone may have held writes back */
		break;
	case RMSG_FILL:
		if (m->shard < rs->env.number_of_shards)
			replica_copy_on_fill(rs, m);
		break;
	case RMSG_FILL_ACK:
		if (m->shard < rs->env.number_of_shards)
			replica_home_on_reply(rs, m);
		break;
	case RMSG_REFUSED:
		if (m->shard < rs->env.number_of_shards && replica_home_on_refused(rs, m))
			replicated_owe(rs, m->shard, SHARD_OWES_FENCE);
		rs->recheck = true;
		break;
	default:
		break; /* the coordinator's */
	}
	tell_owed(rs);
}

void replicated_store_flush(struct replicated_store *rs)
{
	if (rs != NULL)
		replica_home_flush(rs);
}
