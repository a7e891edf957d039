/*
 * shard_state.h — a shard's entity states as Erlang terms, for moving
 * them with the shard (docs/contract.md, "Entity state").
 *
 * On a planned move the old home writes its live entities' states in
 * chunks, each the term [{Id, State}] (Id the entity id, State what the
 * type's encode_state wrote), so that a shard of a million entities moves
 * as many bounded messages rather than one that holds up the loop; the new
 * home reads each chunk back into live entities before any buffered
 * message reaches them. A chunk is ordinary external term format: a BEAM
 * can read it with binary_to_term/1.
 *
 * Only types that keep state (entity_type_keeps_state) have anything to
 * export; entities of other types start afresh on the new home, as in
 * entity API v1.
 */
#ifndef SN_SHARD_STATE_H
#define SN_SHARD_STATE_H

#include <stddef.h>
#include <stdint.h>

#include <ei.h>

#include "entity/shard.h"

/* Where the next chunk starts. Zero it before the first. */
struct shard_state_cursor {
	size_t slot; /* the entity table's slot to look at next */
};

/* Appends to `out` (an initialised ei_x_buff, at a term's start) the chunk
 * [{Id, State}] of the live entities from the cursor on, ending once at
 * least max_bytes have been written (an entity is never split, so a chunk
 * holds at least one entity when any remains) or at the table's end, and
 * moves the cursor past them. *count gets the entities written.
 *
 * Returns 1 when entities remain for another chunk, 0 when this chunk is
 * the last (it may be []), or -ENOMEM (out as it was, cursor unmoved).
 * Between the first chunk and the last, the shard must not change: a
 * shard handing off handles no message and is not passivated. */
int shard_state_export(const struct shard *s, struct shard_state_cursor *cur, size_t max_bytes, ei_x_buff *out,
		       size_t *count);

/* One entity of a chunk: its canonical id and its state term (no version
 * byte), valid during the call. Returns 0 to go on, or a negative errno
 * that ends the walk and is returned. */
typedef int (*shard_state_each_fn)(void *arg, const char *id, size_t id_len, const char *state, size_t state_len);

/* Walks a chunk [{Id, State}] (a validated term, no version byte, `len`
 * bytes), calling `fn` for each entity in order. Returns 0; -EPROTO for a
 * chunk that is not [{Id, State}] or an id that is no entity id; -ENOMEM;
 * or fn's error. The entities before a fault have been seen. */
int shard_state_each(const char *chunk, size_t len, shard_state_each_fn fn, void *arg);

/* Restores the entities of one chunk (a validated term, no version byte,
 * `len` bytes) into `s`: each is started (the type's start callback) and
 * given its state (decode_state), and the observer hears it started. An id
 * that is live already is left as it is. *restored gets how many were
 * started.
 *
 * Returns 0; -EPROTO for a chunk that is not [{Id, State}], an id that is
 * no entity id, or a state the type refuses; -EINVAL when the shard's
 * type keeps no state; -ENOMEM. On an error the entities before the fault
 * stay restored and the one at fault is not left behind. */
int shard_state_import(struct shard *s, const char *chunk, size_t len, uint32_t now_ms, size_t *restored);

#endif
