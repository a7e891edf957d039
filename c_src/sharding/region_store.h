/*
 * region_store.h — a region backed by a durable store: loads, writes, replies held for commits, claims and fencing (region_store.c). For the files of a region only
 * (region_internal.h says which may call which); other modules use
 * region.h.
 */
#ifndef SN_REGION_STORE_H
#define SN_REGION_STORE_H

#include "sharding/region_internal.h"

/* Whether the region keeps its entities' states in a store: cfg.store,
 * a type that keeps state, and not a proxy. */
bool region_store_wanted(const struct region *r);

/* The type's handle, opened by the hub (region.c) with its callbacks —
 * the node's store as it is, or a replicated store over it: this file
 * asks either the same. Taken (closed by region_store_stop). */
void region_store_start(struct region *r, struct state_store_type *t);

/* The store's outcomes, for the hub. A load answered: the entity starts
 * with its stored state (or afresh); *shard is its shard, and true means
 * the slot's loads are all done, so what waited may go on. */
bool region_store_on_loaded(struct region *r, uint64_t token, int found, const char *state, size_t len,
			    uint32_t *shard);

/* A claim of `shard` committed: true once none is left, so what waited
 * may go on. */
bool region_store_on_claimed(struct region *r, uint32_t shard);

/* Another member holds `shard` now (`why`, for the log: it claimed it in
 * a shared store, or a newer replica set names it home): its held replies
 * get {error, store_unavailable}; true if the hub must step the slot
 * SLOT_FENCED. */
bool region_store_on_fenced(struct region *r, uint32_t shard, const char *why);

/* Writes durable up to `upto` (status: 0, or the commit's error): the
 * held replies they cover go, failed ones as {error, store_unavailable}.
 * A number reported again is no news. */
void region_store_on_written(struct region *r, uint64_t upto, int status);

/* The next slot from *from on whose load waited for commits that are now
 * done: true with *from set to it; the slots still waiting keep
 * slots_awaiting_commit set. */
bool region_store_next_load_ready(struct region *r, uint32_t *from);

/* Answers every held reply {error, shutting_down}, drops the loads under
 * way, closes the type's database. Idempotent. The state chunks'
 * acknowledgements held for commits are region_state_release_acks'. */
void region_store_stop(struct region *r);

/* Whether the region has a store. Inline: the memory-only message path
 * asks it twice per message. */
static inline bool region_store_active(const struct region *r) { return r->store != NULL; }

/* Whether every member reads the same store (state_store.shared): then a
 * move streams no states, only waits for the old home's commits. */
static inline bool region_store_shared(const struct region *r) { return r->store != NULL && r->cfg.store->shared; }

/* Whether message `e` for its entity (e->id) of hosted shard `shard` must
 * wait in the shard's buffer: an earlier load is under way, or the entity
 * is not live and its stored state is to be loaded first (this starts the
 * load, at once or once earlier writes are committed; the shard's buffer
 * is flushed when it is done). Delete and passivate (e->kind) need no
 * load. False without a store. */
bool region_store_must_wait(struct region *r, uint32_t shard, const struct envelope *e);

/* Starts a remembered entity of hosted shard `shard` without a message:
 * at once, or with a store once its stored state is loaded (the shard's
 * messages wait meanwhile). Returns 0 (also when it is live already) or
 * -ENOMEM. */
int region_start_entity(struct region *r, uint32_t shard, const char *id, size_t id_len);

/* Frees the slot's loads under way (the shard left). */
void region_store_drop_loads(struct shard_slot *slot);

/* The shard is hosted here from now on: with a shared store, claim it
 * (fencing, state_store.h) — its messages wait until the claim is
 * committed. Nothing to do otherwise. */
void region_store_claim(struct region *r, uint32_t shard);

/* Queues the entity's new state (`state`: a term with its version byte) or,
 * state NULL, its deletion. Returns 0, -ENOMEM, or -ESTALE (a shared
 * store: the shard is not claimed, or was claimed by another member). */
int region_store_write(struct region *r, uint32_t shard, const char *id, size_t id_len, const ei_x_buff *state);

/* As region_store_write, for a record that does not come from a live
 * entity here (a moved state, a replica's copy): a load of any entity of
 * the shard waits for its commit. */
int region_store_write_record(struct region *r, uint32_t shard, const char *id, size_t id_len,
			      const ei_x_buff *state);

/* The entity with canonical id `id` changed its record while not live
 * here (a `delete` of an entity passivated): its next load waits for the
 * shard's writes queued so far, as a retired entity's does. */
void region_store_note_retired(struct region *r, const char *id, size_t id_len);

/* Queues the deletion of every stored record of `shard` (a stream of its
 * states begins: what this node held of it before is out of date).
 * Returns 0 or -ENOMEM. */
int region_store_delete_shard(struct region *r, uint32_t shard);

/* The writes queued so far, by any type of this node's store. */
uint64_t region_store_last_queued(const struct region *r);

/* Answers `e` with `reply` once every write queued so far is committed (at
 * once if they are). */
void region_store_answer(struct region *r, uint32_t shard, const struct envelope *e, const ei_x_buff *reply);

/* The retry timer: held replies past store_timeout_ms are answered
 * {error, store_unavailable}. */
void region_store_tick(struct region *r);

#endif
