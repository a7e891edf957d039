/*
 * shard.h — one shard hosted by a region: its live entities and their
 * lifecycle (start on first message, passivate on request or when idle).
 *
 * Entity callbacks run synchronously on the loop, so an entity's stop is
 * complete before the next message is looked at: a message that follows a
 * `passivate` simply starts a new incarnation. No buffering is needed inside
 * the shard.
 */
#ifndef SN_SHARD_H
#define SN_SHARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ei.h>

#include "entity/entity.h"
#include "base/byte_set.h"
#include "base/freq_sketch.h"
#include "entity/entity_table.h"

/* Told of each entity that starts, and of each one stopped for good
 * (`passivate`, ENTITY_STOP, idle passivation) — not of those stopped
 * with the shard, which live on where the shard goes next. Ids are
 * canonical bytes, valid during the call. For remembered entities. */
struct shard_observer {
	void (*started)(void *arg, uint32_t shard, const char *id, size_t len);
	void (*stopped)(void *arg, uint32_t shard, const char *id, size_t len);
	void *arg;
};

struct shard;

/* Told of every incarnation of an entity that begins (started, restored)
 * or ends (any stop, the shard's own end included), for the test setting
 * instance_reports_to (region_instances.c). Ids are canonical bytes,
 * valid during the call. */
struct shard_instance_hook {
	void (*event)(void *arg, const struct shard *s, const char *id, size_t len, bool started);
	void *arg;
};

/* An active-entity limit shared by shards (a region's
 * max_active_entities): beyond `max` live entities, the least recently
 * used are passivated as idle ones are, in constant time each (the list of
 * entity_table.h). Held by its owner, which must keep it while its shards
 * have entities; zero-initialise it with shard_limit_init. */
struct shard;

struct shard_limit {
	struct entity_lru lru;
	size_t max;          /* >= 1 */
	uint64_t passivated; /* entities passivated for the limit */
	/* With by_frequency: how often each entity was asked lately; the one
	 * passivated is the least often asked of the 8 least recently used
	 * (frequency kept off the least recent, as W-TinyLFU's admission
	 * keeps it out of the main space), else the least recently used. */
	struct freq_sketch sketch; /* empty: plain LRU */
	/* Whether entity e of shard s may be passivated now: not while the
	 * shard's states are being sent away or it is still arriving (its
	 * table is walked across turns), nor while e has a message at its
	 * process (a type run on a host). NULL: always. */
	bool (*may_evict)(void *arg, const struct shard *s, const struct entity *e);
	void *may_evict_arg;
};

/* An empty limit of max entities (at least 1), may_evict unset, the
 * victim chosen by frequency too if by_frequency. Returns 0 or -ENOMEM
 * (nothing to free). */
int shard_limit_init(struct shard_limit *l, size_t max, bool by_frequency);

/* Frees what the limit holds (its shards must have no entities left). */
void shard_limit_free(struct shard_limit *l);

/* The ids of entities stopped for good (passivated, stopped, evicted for
 * the limit, deleted), for a region with a store: their last writes may
 * not be committed yet, so loading them must wait for those
 * (region_store.c); any other entity loads at once. Held by the region. */
struct shard_retired {
	struct byte_set ids;
	bool incomplete; /* an id could not be kept (out of memory): assume any */
};

/* Keeps id[0..len) among the retired (out of memory: marks the set
 * incomplete). */
void shard_retired_add(struct shard_retired *r, const char *id, size_t len);

struct shard {
	uint32_t id;
	const struct entity_type *type;
	struct entity_table entities;
	uint64_t started, passivated; /* entity incarnations, for stats */
	struct shard_observer observer; /* all NULL: nobody watches */
	struct shard_instance_hook instances; /* all NULL: nobody watches */
	struct shard_limit *limit;      /* NULL: none */
	struct shard_retired *retired;  /* NULL: not kept */
};

/* Returns a new empty shard, or NULL (out of memory). */
struct shard *shard_new(uint32_t id, const struct entity_type *type);

/* The live entity `e` of s was given a message by its caller (a type run
 * on a host, whose messages do not go through shard_deliver): stamped
 * with now_ms, the most recently used, and the active-entity limit
 * enforced (never on e itself). */
void shard_touch_entity(struct shard *s, struct entity *e, uint32_t now_ms);

/* Puts the shard's entities under `limit` (not owned). Only while it has
 * none. */
void shard_set_limit(struct shard *s, struct shard_limit *limit);

/* Delivers msg to the entity with canonical id bytes `id`, starting it if it
 * is not live, and encodes the reply (no version byte) into `reply`.
 * `passivate` says the message is the bare atom `passivate` (the caller's
 * one look at its head; the envelope's ENVELOPE_PASSIVATE): answered `ok`,
 * it stops a live entity (without starting a dead one) and never reaches
 * the type. `now_ms` stamps the entity's last activity.
 *
 * `changed`: NULL, or an empty buffer that gets the entity's new state
 * (encode_state's term, version byte first) when the message changed it —
 * a type that keeps state said so — for a store to write; left empty
 * otherwise. If encoding fails, the entity is stopped (its change is not
 * kept anywhere, so it must not answer from it again) and -EIO returned,
 * the reply left as the entity wrote it.
 *
 * Returns 0, -ENOMEM (reply holds {error, enomem}), or -EIO. */
int shard_deliver(struct shard *s, const char *id, size_t id_len, const char *msg, size_t msg_len, bool passivate,
		  uint32_t now_ms, ei_x_buff *reply, ei_x_buff *changed);

/* Encodes into `reply` (no version byte) what the entity with canonical
 * id bytes `id` holds now, for a look that must not change it (nothing is
 * started, stamped or counted): {ok, State} with encode_state's term,
 * {error, not_running} when it is not live, {error, no_state} for a type
 * that keeps none; {error, enomem} when that could not be encoded.
 * Returns 0, or -ENOMEM when not even that fits (send nothing). */
int shard_peek_entity(const struct shard *s, const char *id, size_t id_len, ei_x_buff *reply);

/* Whether the entity with canonical id bytes `id` is live. */
bool shard_entity_live(const struct shard *s, const char *id, size_t id_len);

/* Stops the entity (if live) for good: the observer hears it. For a
 * `delete`. */
void shard_stop_entity(struct shard *s, const char *id, size_t id_len);

/* Starts the entity with canonical id bytes `id` if it is not live, without
 * a message (a remembered entity). Returns 0 (started or already live),
 * -ENOMEM, or -ECANCELED (the type's start callback refused; nothing is
 * left behind). */
int shard_start_entity(struct shard *s, const char *id, size_t id_len, uint32_t now_ms);

/* Starts the entity with canonical id bytes `id` and restores the state
 * term state[0..state_len) into it (the type keeps state:
 * entity_type_keeps_state; the term is validated), for a state moved with
 * its shard. Returns 1 (started; the observer hears it), 0 (live already:
 * left as it is), -ENOMEM, or -EPROTO (start or decode_state refused;
 * nothing is left behind). */
int shard_restore_entity(struct shard *s, const char *id, size_t id_len, const char *state, size_t state_len,
			 uint32_t now_ms);

/* Stops entities idle for at least idle_ms. Returns how many. */
size_t shard_passivate_idle(struct shard *s, uint32_t now_ms, uint32_t idle_ms);

/* Stops every entity and frees the shard. */
void shard_free(struct shard *s);

#endif
